/**
 * Parquet through hyparquet-writer, one row group at a time, so memory is bounded by a row
 * group, not by the export. Every column is OPTIONAL (nullable). Types:
 * - `string`: BYTE_ARRAY, UTF8 (STRING);
 * - `integer`: INT64;
 * - `timestamp`: INT64, TIMESTAMP(MILLIS, UTC);
 * - `json`: BYTE_ARRAY, JSON (the JSON text; `metadata` is JSON text, not a struct).
 * Snappy-compressed; dictionary encoding only where values repeat (run, pipeline, task, ...).
 */
import { ByteWriter, type ColumnSource, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import type { ExportColumn, ExportRow } from '../../store/index.ts';
import type { RowEncoder } from './encoder.ts';

export interface ParquetOptions {
  /** Rows per row group at most; default 10,000. */
  rowGroupRows?: number;
  /** Characters of text per row group at most (a row group ends early past it); default 2 Mi. */
  rowGroupChars?: number;
}

/** Columns whose values repeat a lot: worth a dictionary. The others are written PLAIN. */
const REPEATING = new Set([
  'run_id',
  'pipeline',
  'task_key',
  'query',
  'source',
  'category',
  'language',
  'status_code',
  'purpose',
  'outcome',
  'status',
  'last_error_code',
  'first_seen_run',
  'search_entry',
]);

function schemaElement(column: ExportColumn): SchemaElement {
  const base = { name: column.name, repetition_type: 'OPTIONAL' } as const;
  switch (column.type) {
    case 'integer':
      return { ...base, type: 'INT64' };
    case 'timestamp':
      return {
        ...base,
        type: 'INT64',
        converted_type: 'TIMESTAMP_MILLIS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
      };
    case 'json':
      // Some readers (DuckDB, for one) know JSON by its converted type; the logical type follows.
      return {
        ...base,
        type: 'BYTE_ARRAY',
        converted_type: 'JSON',
        logical_type: { type: 'JSON' },
      };
    default:
      return {
        ...base,
        type: 'BYTE_ARRAY',
        converted_type: 'UTF8',
        logical_type: { type: 'STRING' },
      };
  }
}

type Convert = (v: string | number | null) => unknown;

function converter(column: ExportColumn): Convert {
  switch (column.type) {
    case 'integer':
    case 'timestamp':
      return (v) => (v === null ? null : BigInt(v));
    case 'json':
      // hyparquet-writer serialises JSON values itself, so the stored text is parsed first.
      return (v) => (v === null ? null : JSON.parse(String(v)));
    default:
      return (v) => (v === null ? null : String(v));
  }
}

/**
 * UTF-8 bytes of a column's strings: encoded in one call into one buffer, each value a view of
 * it (a TextEncoder call per value costs more than the copying it does).
 */
function utf8Column(values: readonly unknown[]): unknown[] {
  let text = '';
  for (const v of values) if (typeof v === 'string') text += v;
  const bytes = Buffer.from(text, 'utf8');
  const out = new Array(values.length);
  let at = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'string') {
      out[i] = null;
      continue;
    }
    const n = bytes.length === text.length ? v.length : Buffer.byteLength(v, 'utf8');
    out[i] = bytes.subarray(at, at + n);
    at += n;
  }
  return out;
}

export function createParquetEncoder(
  columns: readonly ExportColumn[],
  options: ParquetOptions = {},
): RowEncoder {
  const maxRows = options.rowGroupRows ?? 5_000;
  const maxChars = options.rowGroupChars ?? 2 * 1024 * 1024;
  const bytes = new ByteWriter(1 << 20);
  const writer = new ParquetWriter({
    writer: bytes,
    schema: [{ name: 'root', num_children: columns.length }, ...columns.map(schemaElement)],
    createdBy: 'harvest (hyparquet-writer)',
  });
  const converters = columns.map(converter);
  let pending: ExportRow[] = [];
  let pendingChars = 0;

  /** What the writer produced since the last call, copied out; the buffer is reused. */
  function take(): Uint8Array[] {
    if (bytes.index === 0) return [];
    const out = Buffer.from(new Uint8Array(bytes.buffer, 0, bytes.index));
    bytes.index = 0;
    return [out];
  }

  function writeGroup(): void {
    if (pending.length === 0) return;
    const rows = pending;
    const columnData: ColumnSource[] = columns.map((c, j) => {
      const convert = converters[j]!;
      let data: unknown[] = new Array(rows.length);
      for (let i = 0; i < rows.length; i++) data[i] = convert(rows[i]![j] ?? null);
      const repeating = REPEATING.has(c.name);
      if (c.type === 'string' && !repeating) data = utf8Column(data);
      return {
        name: c.name,
        data,
        // Long text gets no dictionary and no min/max statistics: neither would be of use.
        ...(repeating ? {} : { encoding: 'PLAIN' as const }),
        statistics: repeating || c.type === 'integer' || c.type === 'timestamp',
      };
    });
    writer.write({ columnData, rowGroupSize: rows.length });
    pending = [];
    pendingChars = 0;
  }

  return {
    encode(rows) {
      const out: Uint8Array[] = [];
      for (const row of rows) {
        pending.push(row);
        for (const v of row) if (typeof v === 'string') pendingChars += v.length;
        if (pending.length >= maxRows || pendingChars >= maxChars) {
          writeGroup();
          out.push(...take());
        }
      }
      return out.length > 0 ? out : take();
    },
    finish() {
      writeGroup();
      const empty = writer.row_groups.length === 0;
      writer.finish();
      const out = take();
      if (empty) for (const chunk of out) typeEmptyRowGroups(chunk);
      return out;
    },
  };
}

/**
 * An export with no rows has an empty `row_groups` list in its footer, which hyparquet-writer
 * writes with no element type (Thrift compact type 0). DuckDB reads that; stricter readers
 * (arrow-rs, so parquet-wasm and Polars) refuse the file. The list is typed as structs in place:
 * `num_rows = 0` (field 3, i64, 0x16 0x00), then field 4 as a list (0x19) of size 0, whose
 * header byte becomes 0x0C (size 0, struct). Same length, so the footer length stands.
 */
function typeEmptyRowGroups(bytes: Uint8Array): void {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 0x16 && bytes[i + 1] === 0x00 && bytes[i + 2] === 0x19) {
      if (((bytes[i + 3] ?? 0xff) & 0xf0) === 0) bytes[i + 3] = 0x0c;
      return;
    }
  }
}
