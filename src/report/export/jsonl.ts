/**
 * JSONL: one JSON object per line (`\n`), keys in column order. Strings are JSON strings,
 * integers numbers, timestamps ISO 8601 UTC strings, `json` columns the nested value as stored
 * (written through, not parsed again); null stays null.
 *
 * The encoder is generated once per export from its column list (`compileLineEncoder`), with
 * each column's key as a literal.
 */
import type { ExportColumn, ExportRow } from '../../store/index.ts';
import { compileLineEncoder, type EncodeRows, type RowEncoder } from './encoder.ts';

/** The JavaScript expression writing the cell `v` (never undefined) of a column. */
function cellExpression(column: ExportColumn, i: number, v: string): string {
  switch (column.type) {
    case 'integer':
      return `(typeof ${v} === 'number' ? '' + ${v} : JSON.stringify(${v}))`;
    case 'timestamp':
      return `(typeof ${v} !== 'number' ? 'null' : ${v} === t${i} ? s${i}
        : (t${i} = ${v}, s${i} = '"' + new Date(${v}).toISOString() + '"'))`;
    case 'json':
      return `(${v} === null ? 'null' : ${v})`;
    default:
      return `(${v} === null ? 'null' : JSON.stringify(${v}))`;
  }
}

export function createJsonlEncoder(columns: readonly ExportColumn[]): RowEncoder {
  return { encode: jsonlLines(columns), finish: () => '' };
}

/** The lines of rows. */
export function jsonlLines(columns: readonly ExportColumn[]): EncodeRows {
  return compileLineEncoder(columns, {
    // The key, with the punctuation before it, as a JavaScript string literal.
    cell: (column, i) =>
      `${JSON.stringify(`${i === 0 ? '{' : ','}${JSON.stringify(column.name)}:`)} + ${cellExpression(column, i, `r[${i}]`)}`,
    timestampStart: 'null',
    lineEnd: '}\n',
  });
}

/** Exposed for tests: the line of one row. */
export function jsonlLine(columns: readonly ExportColumn[], row: ExportRow): string {
  return createJsonlEncoder(columns).encode([row]) as string;
}
