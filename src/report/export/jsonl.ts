/**
 * JSONL: one JSON object per line (`\n`), keys in column order. Strings are JSON strings,
 * integers numbers, timestamps ISO 8601 UTC strings, `json` columns the nested value as stored
 * (written through, not parsed again); null stays null.
 */
import type { ExportColumn, ExportRow } from '../../store/index.ts';
import type { RowEncoder } from './encoder.ts';

type Cell = string | number | null;

function cellWriter(column: ExportColumn): (value: Cell) => string {
  switch (column.type) {
    case 'integer':
      return (v) => (typeof v === 'number' ? String(v) : JSON.stringify(v));
    case 'timestamp':
      return (v) => (typeof v === 'number' ? `"${new Date(v).toISOString()}"` : 'null');
    case 'json':
      return (v) => (v === null ? 'null' : String(v));
    default:
      return (v) => JSON.stringify(v);
  }
}

export function createJsonlEncoder(columns: readonly ExportColumn[]): RowEncoder {
  const keys = columns.map((c, i) => `${i === 0 ? '{' : ','}${JSON.stringify(c.name)}:`);
  const writers = columns.map(cellWriter);
  const width = columns.length;
  return {
    encode(rows) {
      let out = '';
      for (const row of rows) {
        let line = '';
        for (let i = 0; i < width; i++) line += keys[i]! + writers[i]!(row[i] ?? null);
        out += `${line}}\n`;
      }
      return out;
    },
    finish: () => '',
  };
}

/** Exposed for tests: the line of one row. */
export function jsonlLine(columns: readonly ExportColumn[], row: ExportRow): string {
  return createJsonlEncoder(columns).encode([row]) as string;
}
