/**
 * Parquet through hyparquet-writer, one row group at a time, so memory is bounded by a row
 * group, not by the export. Every column is OPTIONAL (nullable). Types:
 * - `string`: BYTE_ARRAY, UTF8 (STRING);
 * - `integer`: INT64;
 * - `timestamp`: INT64, TIMESTAMP(MILLIS, UTC);
 * - `json`: BYTE_ARRAY, JSON (the JSON text; `metadata` is JSON text, not a struct).
 * Snappy-compressed (./snappy.ts); dictionary encoding only where values repeat (run, pipeline,
 * task, ...).
 *
 * Over 300 lines: one small column builder per physical type, and the row group that owns
 * their buffers (sent to the Parquet thread and back) must agree on their layout.
 */
import { ByteWriter, type ColumnSource, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import type { ExportColumn } from '../../store/index.ts';
import type { RowEncoder } from './encoder.ts';
import { nativeSnappyCompress } from './snappy.ts';
import type { SpareBuffers } from './spare-buffers.ts';

export interface ParquetOptions {
  /** Rows per row group at most; default 5,000. */
  rowGroupRows?: number;
  /** Bytes of text per row group at most (a row group ends early past it); default 2 MiB. */
  rowGroupBytes?: number;
  /** Where the encoded bytes go: buffers their writer handed back; new ones by default. */
  spare?: SpareBuffers;
}

/** Rows of a row group at most, by default. */
export const ROW_GROUP_ROWS = 5_000;

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

/** A value as SQLite hands it over; long text comes as its UTF-8 bytes (a Buffer). */
type Cell = string | number | null | undefined | Uint8Array;

/**
 * A byte column's values of the pending row group (text and JSON text), encoded to UTF-8 as
 * they arrive into one growing buffer outside the JavaScript heap, so the strings SQLite handed
 * over die young instead of being kept (and promoted, and collected late) for a whole row group.
 */
class Utf8Column {
  private bytes = Buffer.allocUnsafe(64 * 1024);
  private size = 0;
  /** End offset of each value; -1 for null. */
  private ends: number[] = [];

  get byteLength(): number {
    return this.size;
  }

  push(v: Cell): void {
    if (typeof v === 'string') {
      // UTF-8 takes at most 3 bytes per UTF-16 code unit.
      this.#room(v.length * 3);
      this.size += this.bytes.write(v, this.size, 'utf8');
    } else if (v instanceof Uint8Array) {
      this.#room(v.length);
      this.bytes.set(v, this.size);
      this.size += v.length;
    } else {
      this.ends.push(-1);
      return;
    }
    this.ends.push(this.size);
  }

  #room(bytes: number): void {
    const room = this.size + bytes;
    if (room > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(room, this.bytes.length * 2));
      this.bytes.copy(grown, 0, 0, this.size);
      this.bytes = grown;
    }
  }

  /**
   * Views of the values (null kept). They are views of a buffer the next row group reuses: the
   * writer copies them into its pages before `write` returns (they get no statistics, no
   * dictionary, no index), so they must not be kept past it.
   */
  drain(): (Uint8Array | null)[] {
    const values = byteValues(this.bytes, this.ends);
    this.size = 0;
    this.ends = [];
    return values;
  }

  /** The values as bytes of their own (to hand to another thread), and their ends. */
  take(into: Buffers): BytesData {
    const bytes = into.bytes(this.size);
    bytes.set(this.bytes.subarray(0, this.size));
    const ends = into.int32(this.ends.length);
    ends.set(this.ends);
    this.size = 0;
    this.ends = [];
    return { bytes, ends };
  }
}

/** Where `take` puts a row group's values: new arrays, or spare ones (`SpareBuffers`). */
type Buffers = Pick<SpareBuffers, 'bytes' | 'int32' | 'float64'>;

const FRESH: Buffers = {
  bytes: (n) => new Uint8Array(n),
  int32: (n) => new Int32Array(n),
  float64: (n) => new Float64Array(n),
};

/** A byte column's values: their UTF-8 bytes end to end, and where each ends (-1: null). */
export interface BytesData {
  bytes: Uint8Array;
  ends: Int32Array;
}

function byteValues(bytes: Uint8Array, ends: Int32Array | number[]): (Uint8Array | null)[] {
  const out = new Array<Uint8Array | null>(ends.length);
  let at = 0;
  for (let i = 0; i < ends.length; i++) {
    const end = ends[i]!;
    if (end < 0) {
      out[i] = null;
      continue;
    }
    out[i] = bytes.subarray(at, end);
    at = end;
  }
  return out;
}

/** Integers and timestamps, as doubles (SQLite's integers here are well within 2^53). */
class Int64Column {
  private values = new Float64Array(1024);
  private size = 0;

  push(v: Cell): void {
    if (this.size === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.size++] = typeof v === 'number' ? v : v == null ? Number.NaN : Number(v);
  }

  drain(): (bigint | null)[] {
    return toInt64(this.take(FRESH));
  }

  /** The values, NaN for null, in an array of their own (to hand to another thread). */
  take(into: Buffers): IntegersData {
    const numbers = into.float64(this.size);
    numbers.set(this.values.subarray(0, this.size));
    this.size = 0;
    return { numbers };
  }
}

/** A column of integers: NaN stands for null. */
export interface IntegersData {
  numbers: Float64Array;
}

function toInt64({ numbers }: IntegersData): (bigint | null)[] {
  const out = new Array<bigint | null>(numbers.length);
  for (let i = 0; i < numbers.length; i++) {
    const v = numbers[i]!;
    out[i] = Number.isNaN(v) ? null : BigInt(v);
  }
  return out;
}

/**
 * Strings that repeat (run, pipeline, task, ...): kept as they came for an encoder on this
 * thread (a value equal to the one before is that one: the dictionary sees one string), and
 * as UTF-8 bytes for another thread, which makes them strings again (`repeatingValues`).
 */
class RepeatingColumn {
  private values: Cell[] = [];
  private last: Cell = null;
  /** Where `take` writes the values' bytes (its buffer is reused from one group to the next). */
  private readonly text = new Utf8Column();

  push(v: Cell): void {
    if (typeof v === 'string' && v === this.last) {
      this.values.push(this.last);
      return;
    }
    this.last = v;
    this.values.push(v);
  }

  drain(): Cell[] {
    const values = this.values;
    this.values = [];
    this.last = null;
    return values;
  }

  take(into: Buffers): RepeatingData {
    for (const v of this.drain()) this.text.push(v);
    return { repeating: this.text.take(into) };
  }
}

/** A column of repeating strings, as bytes. */
export interface RepeatingData {
  repeating: BytesData;
}

const utf8 = new TextDecoder();

/** The strings of a repeating column; equal neighbours are one string, as they came. */
function repeatingValues({ repeating: { bytes, ends } }: RepeatingData): (string | null)[] {
  const out = new Array<string | null>(ends.length);
  let at = 0;
  let last: string | null = null;
  let lastAt = -1;
  let lastEnd = -1;
  for (let i = 0; i < ends.length; i++) {
    const end = ends[i]!;
    if (end < 0) {
      out[i] = null;
      continue;
    }
    if (last !== null && end - at === lastEnd - lastAt && sameBytes(bytes, lastAt, at, end - at)) {
      out[i] = last;
    } else {
      last = utf8.decode(bytes.subarray(at, end));
      lastAt = at;
      lastEnd = end;
      out[i] = last;
    }
    at = end;
  }
  return out;
}

function sameBytes(bytes: Uint8Array, a: number, b: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (bytes[a + i] !== bytes[b + i]) return false;
  return true;
}

/**
 * `json` columns are their stored JSON text as UTF-8 bytes, written as they are: the writer is
 * given a schema in which they are plain BYTE_ARRAY (`writeSchema`), so it does not parse and
 * serialise each value again; the footer carries the JSON types (`fileSchema`, put back before
 * `finish`). Long text (strings that do not repeat) is bytes too.
 */
type PendingColumn = Utf8Column | Int64Column | RepeatingColumn;

function pendingColumn(column: ExportColumn): PendingColumn {
  if (column.type === 'integer' || column.type === 'timestamp') return new Int64Column();
  if (column.type === 'json' || !REPEATING.has(column.name)) return new Utf8Column();
  return new RepeatingColumn();
}

function columnSource(column: ExportColumn, data: unknown[]): ColumnSource {
  const repeating = REPEATING.has(column.name);
  return {
    name: column.name,
    data,
    // Long text gets no dictionary and no min/max statistics: neither would be of use. Nor may
    // it: its values are views of buffers that are filled again (`Utf8Column.drain`) or handed
    // back to another thread (`SpareBuffers`) once the row group is written, so a statistic, a
    // column index or a bloom filter kept for the footer would read bytes no longer there.
    ...(repeating ? {} : { encoding: 'PLAIN' as const }),
    statistics: repeating || column.type === 'integer' || column.type === 'timestamp',
  };
}

/**
 * A row group's values, column by column, as typed arrays another thread can be handed
 * (moved, not copied, and nothing for the structured clone to build object by object).
 */
export interface RowGroupData {
  rows: number;
  columns: (BytesData | IntegersData | RepeatingData)[];
}

/** The buffers of a row group: moved, not copied, when it goes to another thread. */
export function groupBuffers(group: RowGroupData): ArrayBuffer[] {
  return group.columns.flatMap((c) => {
    if ('numbers' in c) return [c.numbers.buffer as ArrayBuffer];
    const b = 'repeating' in c ? c.repeating : c;
    return [b.bytes.buffer as ArrayBuffer, b.ends.buffer as ArrayBuffer];
  });
}

/** A column's values, as the writer takes them. */
function columnValues(c: RowGroupData['columns'][number]): unknown[] {
  if ('numbers' in c) return toInt64(c);
  if ('repeating' in c) return repeatingValues(c);
  return byteValues(c.bytes, c.ends);
}

/**
 * A row group's values, each column made only when the writer reaches it: hyparquet-writer
 * reads a column's `length` and takes its rows with `slice`, one column after the other (the
 * round-trip tests, read back by another library, would see any other use). Made all at once,
 * a row group's values (a view per text value, a bigint per integer: some 150,000 objects)
 * lived through the whole group, outlived the young generation and piled up in the old one,
 * doubling the Parquet thread's heap; made column by column, each column's die young.
 */
function groupValues(group: RowGroupData): unknown[][] {
  return group.columns.map((c) => {
    const lazy = {
      length: group.rows,
      slice: (start = 0, end = group.rows) => {
        const values = columnValues(c);
        return start === 0 && end >= values.length ? values : values.slice(start, end);
      },
    };
    return lazy as unknown as unknown[];
  });
}

/**
 * Rows into row groups: each ends at `rowGroupRows` rows, or early once its text passes
 * `rowGroupBytes`. It needs no writer: with a Parquet thread, rows are gathered here and the
 * groups encoded there (`take`).
 */
export class RowGroupBuilder {
  readonly #pending: PendingColumn[];
  readonly #bytesColumns: Utf8Column[];
  readonly #width: number;
  readonly #maxRows: number;
  readonly #maxBytes: number;
  #rows = 0;

  constructor(columns: readonly ExportColumn[], options: ParquetOptions = {}) {
    this.#pending = columns.map(pendingColumn);
    this.#bytesColumns = this.#pending.filter((c) => c instanceof Utf8Column);
    this.#width = columns.length;
    this.#maxRows = options.rowGroupRows ?? ROW_GROUP_ROWS;
    this.#maxBytes = options.rowGroupBytes ?? 2 * 1024 * 1024;
  }

  get rows(): number {
    return this.#rows;
  }

  /** Adds a row; true when the row group is full. */
  push(row: readonly Cell[]): boolean {
    const pending = this.#pending;
    for (let j = 0; j < this.#width; j++) pending[j]!.push(row[j]);
    this.#rows++;
    if (this.#rows >= this.#maxRows) return true;
    let n = 0;
    for (const c of this.#bytesColumns) n += c.byteLength;
    return n >= this.#maxBytes;
  }

  /** The pending row group, for `write` on this thread; its byte values are views, see drain. */
  drain(): { rows: number; columnData: unknown[][] } {
    const rows = this.#rows;
    this.#rows = 0;
    return { rows, columnData: this.#pending.map((c) => c.drain()) };
  }

  /**
   * The pending row group as data of its own, to hand to another thread; in buffers handed back
   * by that thread when `into` has some.
   */
  take(into: Buffers = FRESH): RowGroupData {
    const rows = this.#rows;
    this.#rows = 0;
    return { rows, columns: this.#pending.map((c) => c.take(into)) };
  }
}

/** A Parquet encoder that also takes row groups built elsewhere (`RowGroupBuilder.take`). */
export interface ParquetEncoder extends RowEncoder {
  encodeGroups(groups: readonly RowGroupData[]): Uint8Array[];
}

export function createParquetEncoder(
  columns: readonly ExportColumn[],
  options: ParquetOptions = {},
): ParquetEncoder {
  const bytes = new ByteWriter(1 << 20);
  const root: SchemaElement = { name: 'root', num_children: columns.length };
  const fileSchema = [root, ...columns.map(schemaElement)];
  const writeSchema = fileSchema.map((e, j) =>
    columns[j - 1]?.type === 'json'
      ? { name: e.name, repetition_type: e.repetition_type, type: e.type }
      : e,
  );
  const writer = new ParquetWriter({
    writer: bytes,
    schema: writeSchema,
    createdBy: 'harvest (hyparquet-writer)',
    ...(nativeSnappyCompress ? { compressors: { SNAPPY: nativeSnappyCompress } } : {}),
  });
  // The pending row group, column by column: a row's array is dropped as soon as it is read.
  const builder = new RowGroupBuilder(columns, options);

  const into = options.spare ?? FRESH;

  /**
   * What the writer produced since the last call, copied out into a buffer of its own (which
   * can be moved to another thread as it is); the writer's buffer is reused.
   */
  function take(buffers: Buffers = into): Uint8Array[] {
    if (bytes.index === 0) return [];
    const out = buffers.bytes(bytes.index);
    out.set(new Uint8Array(bytes.buffer, 0, bytes.index));
    bytes.index = 0;
    return [out];
  }

  function write(rowGroupSize: number, data: readonly unknown[][]): void {
    if (rowGroupSize === 0) return;
    const columnData = columns.map((c, j) => columnSource(c, data[j]!));
    writer.write({ columnData, rowGroupSize });
  }

  function writeGroup(): void {
    const { rows, columnData } = builder.drain();
    write(rows, columnData);
  }

  return {
    encode(rows) {
      const out: Uint8Array[] = [];
      for (const row of rows) {
        if (builder.push(row)) {
          writeGroup();
          out.push(...take());
        }
      }
      return out.length > 0 ? out : take();
    },
    encodeGroups(groups) {
      // Rows this encoder was given itself come first.
      writeGroup();
      for (const group of groups) write(group.rows, groupValues(group));
      return take();
    },
    finish() {
      writeGroup();
      const empty = writer.row_groups.length === 0;
      writer.schema = fileSchema;
      writer.finish();
      // The footer, which grows with the export (some 50 kB per row group), at its own size.
      const out = take(FRESH);
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
