/**
 * CSV per RFC 4180 (Papa Parse's unparser): a header row of column names, CRLF line ends,
 * fields quoted when they hold a comma, a quote, a line break or edge spaces, quotes doubled.
 * Null is an empty field; timestamps are ISO 8601 UTC; `json` columns are their JSON text.
 *
 * A text cell a spreadsheet would run as a formula (it begins with `=`, `+`, `-`, `@`, a tab or
 * a carriage return: OWASP's rule) gets a leading `'` and quotes, as Papa Parse's
 * `escapeFormulae` writes it, unless `csvRaw`. Titles and text come from any web page.
 * Integer, timestamp and json cells stay as they are: digits (`-5` is a number), dates, and
 * JSON text, which begins with `{`, `[`, `"`, a digit, `-` (a number) or a literal.
 *
 * Papa Parse decides every quoting: a text that holds none of the characters that could make
 * it quote (`csvField`) is written as it is, which is what Papa Parse writes for it too, and
 * any other text goes through Papa Parse. The rows are written by a function generated once per
 * export from its column list (`compileLineEncoder`), as JSONL's are.
 */
import Papa from 'papaparse';
import type { ExportColumn } from '../../store/index.ts';
import { compileLineEncoder, type EncodeRows, type RowEncoder } from './encoder.ts';

/**
 * The start of a cell a spreadsheet runs as a formula. Papa Parse's own pattern for
 * `escapeFormulae: true` (`/^[=+\-@\t\r].*$/`) misses a formula followed by a line break.
 */
export const FORMULA_START = /^[=+\-@\t\r]/;

const OPTIONS = { newline: '\r\n', quotes: false, header: false } as const;
const FORMULA_OPTIONS = { ...OPTIONS, escapeFormulae: FORMULA_START } as const;

/**
 * Text Papa Parse may quote or change, with these options: a quote, the delimiter, a line
 * break, a byte order mark (its BAD_DELIMITERS), or a space at either end; with
 * `escapeFormulae`, also a formula's first character.
 */
const MAY_QUOTE = /[",\r\n\ufeff]|^ | $/;
const MAY_QUOTE_OR_ESCAPE = /[",\r\n\ufeff]|^[ =+\-@\t]| $/;

/** One CSV field, as Papa Parse writes it. */
export function csvField(text: string): string {
  return MAY_QUOTE.test(text) ? Papa.unparse([[text]], OPTIONS) : text;
}

/** One CSV text field, as Papa Parse writes it with `escapeFormulae` (`FORMULA_START`). */
export function csvTextField(text: string): string {
  return MAY_QUOTE_OR_ESCAPE.test(text) ? Papa.unparse([[text]], FORMULA_OPTIONS) : text;
}

export interface CsvOptions {
  /** Write text cells as they are, formulas included; default false. */
  csvRaw?: boolean | undefined;
}

/** The JavaScript expression writing the cell `v` (a raw SQLite value) of a column. */
function cellExpression(column: ExportColumn, i: number, v: string): string {
  switch (column.type) {
    case 'integer':
      return `(${v} === null ? '' : typeof ${v} === 'number' ? '' + ${v} : field('' + ${v}))`;
    case 'timestamp':
      return `(typeof ${v} !== 'number' ? '' : ${v} === t${i} ? s${i}
        : (t${i} = ${v}, s${i} = new Date(${v}).toISOString()))`;
    case 'json':
      return `(${v} === null ? '' : field(${v}))`;
    default:
      return `(${v} === null ? '' : text(${v}))`;
  }
}

/** The lines of rows, without the header. */
export function csvLines(columns: readonly ExportColumn[], options: CsvOptions = {}): EncodeRows {
  return compileLineEncoder(columns, {
    cell: (column, i) => `${i === 0 ? '' : "',' + "}${cellExpression(column, i, `r[${i}]`)}`,
    timestampStart: '',
    lineEnd: '\r\n',
    helpers: { field: csvField, text: options.csvRaw ? csvField : csvTextField },
  });
}

export function createCsvEncoder(
  columns: readonly ExportColumn[],
  options: CsvOptions = {},
): RowEncoder {
  const encodeRows = csvLines(columns, options);
  let header = `${Papa.unparse([columns.map((c) => c.name)], OPTIONS)}\r\n`;
  return {
    encode(rows) {
      if (rows.length === 0) return '';
      const text = `${header}${encodeRows(rows)}`;
      header = '';
      return text;
    },
    // A file with no rows still has its header.
    finish: () => header,
  };
}
