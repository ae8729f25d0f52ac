/**
 * CSV per RFC 4180 (Papa Parse's unparser): a header row of column names, CRLF line ends,
 * fields quoted when they hold a comma, a quote, a line break or edge spaces, quotes doubled.
 * Null is an empty field; timestamps are ISO 8601 UTC; `json` columns are their JSON text.
 */
import Papa from 'papaparse';
import type { ExportColumn } from '../../store/index.ts';
import type { RowEncoder } from './encoder.ts';

const OPTIONS = { newline: '\r\n', quotes: false, header: false } as const;

export function createCsvEncoder(columns: readonly ExportColumn[]): RowEncoder {
  const timestamps = columns.flatMap((c, i) => (c.type === 'timestamp' ? [i] : []));
  let header = `${Papa.unparse([columns.map((c) => c.name)], OPTIONS)}\r\n`;
  return {
    encode(rows) {
      if (rows.length === 0) return '';
      if (timestamps.length > 0) {
        for (const row of rows) {
          for (const i of timestamps) {
            const v = row[i];
            if (typeof v === 'number') row[i] = new Date(v).toISOString();
          }
        }
      }
      const text = `${header}${Papa.unparse(rows as unknown[][], OPTIONS)}\r\n`;
      header = '';
      return text;
    },
    // A file with no rows still has its header.
    finish: () => header,
  };
}
