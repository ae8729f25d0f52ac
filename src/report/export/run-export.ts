/**
 * `harvest export`: checks the request against the store (unknown run, pipeline or field is bad
 * input, exit 2), opens the output (an unwritable path fails before any work), then streams the
 * rows from SQLite through the format's encoder in small batches. Memory holds one batch (one
 * row group for Parquet), whatever the number of rows.
 *
 * A large JSONL or CSV export of results is read in pages by reader threads (page-readers.ts),
 * two cores' worth: this thread exports the first rows itself while they start, then writes
 * their pages in order, asking for the next page as each one is written, a few pages ahead.
 * A large Parquet export of results reads its pages there too, each a row group's values,
 * which this thread passes on to the Parquet thread to encode and writes back in order.
 *
 * Over 300 lines: the three ways of writing (this thread alone, reader threads, the Parquet
 * thread) share one ordering rule, pages written in the order read, kept in one place.
 */
import { availableParallelism } from 'node:os';
import {
  buildExportQuery,
  EXPORT_COLUMNS,
  type ExportColumn,
  type ExportFilter,
  type ExportKey,
  type ExportKind,
  type ExportQuery,
  type ExportRow,
  LONG_TEXT_COLUMNS,
  type Store,
} from '../../store/index.ts';
import { createCsvEncoder } from './csv.ts';
import type { RowEncoder } from './encoder.ts';
import { resolveFields } from './fields.ts';
import { databaseFiles, openFileOutput } from './file-output.ts';
import type { ExportFormat } from './formats.ts';
import { createJsonlEncoder } from './jsonl.ts';
import { type ExportOutput, stdoutOutput } from './output.ts';
import { type Page, type PageReaders, startPageReaders } from './page-readers.ts';
import {
  createParquetEncoder,
  type ParquetEncoder,
  ROW_GROUP_ROWS,
  RowGroupBuilder,
  type RowGroupData,
} from './parquet.ts';
import { type Encoded, type ParquetThread, startParquetThread } from './parquet-thread.ts';
import { type RunFilterInput, resolveRunFilter } from './resolve.ts';
import { SpareBuffers } from './spare-buffers.ts';

export interface ExportOptions extends Omit<RunFilterInput, 'kind'> {
  /** Which rows: results (default), calls or tasks. */
  of?: ExportKind;
  format: ExportFormat;
  /** Output file; stdout when absent. */
  out?: string;
  /** Column names, in output order; default every column of the kind. */
  fields?: readonly string[];
  /** Rows per batch handed to the encoder; default 256. */
  batchRows?: number;
  /**
   * Reader threads for a large export of results; default 2 when the machine has two cores or
   * more, else 0 (every row read and encoded on the calling thread). Parquet uses one at most.
   */
  readerThreads?: number;
  /**
   * Rows exported on the calling thread while reader threads start; an export with no more rows
   * than this stays on the calling thread. Default 8,192.
   */
  firstPageRows?: number;
  /**
   * Parquet row groups encoded on a thread of their own, started once a first row group is
   * full; default true on a machine with two cores or more.
   */
  parquetThread?: boolean;
  /** Rows of a Parquet row group at most; default 5,000. */
  rowGroupRows?: number;
  /**
   * Called before the rows of a Parquet export read on the calling thread (once its Parquet
   * thread runs, when it has one): the CLI sizes V8 for memory there. Not called when reader
   * threads read the rows: this thread then holds little, and the flag slows every thread.
   */
  sizeForMemory?: () => void;
  /** Rows of a page a reader thread reads; default 2,048. */
  pageRows?: number;
  /**
   * CSV: write text cells as they are, even those a spreadsheet would run as a formula (csv.ts);
   * default false: such cells get a leading `'`.
   */
  csvRaw?: boolean;
}

/** Pages asked for before the one being written is done: enough to keep every reader busy. */
const PAGES_AHEAD = 4;

export interface ExportProgress {
  /** Called once before the first row with the number of rows to come. */
  start(total: number): void;
  update(rows: number): void;
  stop(): void;
}

export interface ExportSummary {
  kind: ExportKind;
  format: ExportFormat;
  rows: number;
  columns: string[];
  /** The file written, or null for stdout. */
  out: string | null;
  /** True when stdout's reader went away before the end. */
  truncated: boolean;
}

function encoderFor(
  { format, rowGroupRows, csvRaw }: ExportOptions,
  columns: readonly ExportColumn[],
): RowEncoder | ParquetEncoder {
  if (format === 'csv') return createCsvEncoder(columns, { csvRaw });
  if (format === 'parquet') return createParquetEncoder(columns, { rowGroupRows });
  return createJsonlEncoder(columns);
}

/**
 * Runs an export. `store` should be the export's own (read-only) store: its connection is busy
 * while rows stream. `stdout` receives the rows when `options.out` is absent.
 */
export async function runExport(
  store: Store,
  options: ExportOptions,
  io: { stdout: NodeJS.WritableStream; progress?: ExportProgress },
): Promise<ExportSummary> {
  const kind = options.of ?? 'results';
  const columns = resolveFields(kind, options.fields);
  const filter = resolveRunFilter(store, { ...options, kind });
  const build = { withoutMedia: !store.exports.hasSavedMedia() };
  const query = buildExportQuery(columns, filter, {
    ...build,
    // Parquet wants bytes: long text is read as such, never a string on a thread's heap.
    ...(options.format === 'parquet' ? { asBytes: LONG_TEXT_COLUMNS } : {}),
  });
  const output =
    options.out === undefined
      ? stdoutOutput(io.stdout)
      : await openFileOutput(options.out, databaseFiles(store.path));
  const encoder = encoderFor(options, columns);
  let rows = 0;
  try {
    if (io.progress) {
      // Counting is a second pass over the rows; only worth it for a live bar.
      const counting = buildExportQuery([EXPORT_COLUMNS[kind][0]!], filter, build);
      io.progress.start(store.exports.count(counting));
    }
    let finished = false;
    const paged =
      options.format === 'parquet' && parquetThread(options)
        ? await exportParquetPages(store, query, columns, output, io.progress, options)
        : undefined;
    if (paged !== undefined) {
      rows = paged;
      finished = true;
    } else if ('encodeGroups' in encoder && parquetThread(options)) {
      ({ rows, finished } = await exportParquet(
        store.exports.iterate(query),
        columns,
        encoder,
        output,
        io.progress,
        options,
      ));
    } else {
      if (options.format === 'parquet') options.sizeForMemory?.();
      rows = await exportRows(store, query, options, encoder, output, io.progress);
    }
    if (!output.gone && !finished) await output.write(encoder.finish());
    await output.commit();
  } catch (error) {
    output.abort();
    throw error;
  } finally {
    io.progress?.stop();
  }
  return {
    kind,
    format: options.format,
    rows,
    columns: columns.map((c) => c.name),
    out: options.out ?? null,
    truncated: output.gone,
  };
}

/** Streams the rows of `query` through `encoder` to `output`; returns how many were written. */
async function exportRows(
  store: Store,
  query: ExportQuery,
  options: ExportOptions,
  encoder: RowEncoder,
  output: ExportOutput,
  progress: ExportProgress | undefined,
): Promise<number> {
  const batchRows = options.batchRows ?? 256;
  const threads = readerThreads(options);
  const format = options.format;
  const paged = threads > 0 && query.pages !== undefined && format !== 'parquet';
  // The key of the first page's last row: none when the export is small (or cannot be paged).
  const first = paged
    ? store.exports.keyAt(query, null, options.firstPageRows ?? 8_192)
    : undefined;
  const start = first && store.exports.keyAt(query, null, 1);
  if (first === undefined || start === undefined || format === 'parquet') {
    return pump(store.exports.iterate(query), encoder, output, batchRows, progress);
  }
  const readers = startPageReaders(
    { dbPath: store.path, format, query, csvRaw: options.csvRaw },
    threads,
  );
  try {
    const pages = new PageQueue(store, query, readers, first, options.pageRows ?? 2_048);
    // The readers start on the next pages while this thread exports the first one.
    for (let i = 0; i < PAGES_AHEAD; i++) pages.askNext();
    const firstPage = store.exports.iteratePage(query, { lo: start, fromLo: true, hi: first });
    let rows = await pump(firstPage, encoder, output, batchRows, progress);
    for (let page = pages.next(); page && !output.gone; page = pages.next()) {
      const { rows: n, chunks } = await page;
      await output.write(chunks);
      rows += n;
      progress?.update(rows);
      // Written out already (a file's writes are done when they resolve): their buffers can
      // be filled again.
      pages.askNext(output.copies ? chunks.map((c) => c.buffer as ArrayBuffer) : []);
    }
    return rows;
  } finally {
    await readers.close();
  }
}

function parquetThread(options: ExportOptions): boolean {
  return options.parquetThread ?? availableParallelism() >= 2;
}

function readerThreads(options: ExportOptions): number {
  return options.readerThreads ?? (availableParallelism() >= 2 ? 2 : 0);
}

/** Row groups handed to the Parquet thread, written out in the order they were handed. */
class EncodedGroups {
  readonly #encoded: Promise<Encoded>[] = [];
  readonly #rows: number[] = [];
  /** Buffers of bytes written out, for the Parquet thread to fill again. */
  readonly #written: ArrayBuffer[] = [];
  /** Buffers of row groups encoded, to gather other row groups into. */
  readonly #spare: ArrayBuffer[] = [];
  /** Rows written out. */
  written = 0;

  constructor(
    private readonly thread: ParquetThread,
    private readonly output: ExportOutput,
    private readonly progress: ExportProgress | undefined,
  ) {}

  hand(group: RowGroupData): void {
    const bytes = this.thread.write(group, this.#written.splice(0));
    // A group that fails before its turn is reported at its turn, not as an unhandled rejection.
    bytes.catch(() => undefined);
    this.#encoded.push(bytes);
    this.#rows.push(group.rows);
  }

  /** Writes groups out, in order, until no more than `ahead` are with the thread. */
  async writeOut(ahead: number): Promise<void> {
    while (this.#encoded.length > ahead && !this.output.gone) {
      const { chunks, spare } = await this.#encoded.shift()!;
      await this.output.write(chunks);
      // A file's writes are done with their bytes once they resolve; a stream's may not be.
      if (this.output.copies) for (const c of chunks) this.#written.push(c.buffer as ArrayBuffer);
      this.#spare.push(...spare);
      this.written += this.#rows.shift()!;
      this.progress?.update(this.written);
    }
  }

  /** The buffers of row groups encoded since the last call, to be filled again. */
  takeSpare(): ArrayBuffer[] {
    return this.#spare.splice(0);
  }
}

/**
 * A large Parquet export of results, read in pages by a reader thread: each page is a row
 * group's rows (`rowGroupRows`), its values gathered there as typed arrays, encoded on the
 * Parquet thread, and written here in order. This thread only passes buffers on, so it needs no
 * heap to speak of, and V8 need not be sized for memory (`sizeForMemory`): that slowed every
 * thread of a Parquet export twofold (46 against 20 CPU s for 1M rows), as the flag rules the
 * collector of threads already running. One reader: it and the Parquet thread keep two cores
 * busy, and each thread costs memory. Undefined when the export is small or cannot be paged
 * (`exportParquet` does it then).
 */
async function exportParquetPages(
  store: Store,
  query: ExportQuery,
  columns: readonly ExportColumn[],
  output: ExportOutput,
  progress: ExportProgress | undefined,
  options: ExportOptions,
): Promise<number | undefined> {
  const threads = Math.min(1, readerThreads(options));
  if (threads === 0 || query.pages === undefined) return undefined;
  if (store.exports.keyAt(query, null, options.firstPageRows ?? 8_192) === undefined)
    return undefined;
  const start = store.exports.keyAt(query, null, 1);
  if (start === undefined) return undefined;
  const pageRows = options.rowGroupRows ?? ROW_GROUP_ROWS;
  const firstEnd = store.exports.keyAt(query, null, pageRows);
  if (firstEnd === undefined) return undefined;
  const readers = startPageReaders(
    { dbPath: store.path, format: 'parquet', query, rowGroupRows: pageRows },
    threads,
  );
  const thread = startParquetThread(columns);
  try {
    const groups = new EncodedGroups(thread, output, progress);
    const first = readers.read({ lo: start, fromLo: true, hi: firstEnd });
    first.catch(() => undefined);
    const pages = new PageQueue(store, query, readers, firstEnd, pageRows);
    for (let i = 1; i < PARQUET_PAGES_AHEAD; i++) pages.askNext();
    for (let page: Promise<Page> | undefined = first; page && !output.gone; page = pages.next()) {
      const { groups: read = [] } = await page;
      pages.askNext(groups.takeSpare());
      for (const group of read) groups.hand(group);
      await groups.writeOut(GROUPS_AHEAD);
    }
    await groups.writeOut(0);
    if (!output.gone) await output.write((await thread.finish()).chunks);
    return groups.written;
  } finally {
    await Promise.all([readers.close(), thread.close()]);
  }
}

/** Parquet pages asked for before the one being handed on is back: one reader needs few. */
const PARQUET_PAGES_AHEAD = 2;

/**
 * Parquet with its row groups encoded on a thread of their own (parquet-thread.ts), started
 * once a first row group is full; a smaller export is encoded here (`finished` false: the
 * caller writes the footer).
 */
async function exportParquet(
  source: IterableIterator<ExportRow>,
  columns: readonly ExportColumn[],
  encoder: ParquetEncoder,
  output: ExportOutput,
  progress: ExportProgress | undefined,
  { rowGroupRows, sizeForMemory }: Pick<ExportOptions, 'rowGroupRows' | 'sizeForMemory'>,
): Promise<{ rows: number; finished: boolean }> {
  const builder = new RowGroupBuilder(columns, { rowGroupRows });
  const spare = new SpareBuffers();
  let thread: ParquetThread | undefined;
  let groups: EncodedGroups | undefined;
  let rows = 0;
  try {
    for (const row of source) {
      if (!builder.push(row)) continue;
      rows += builder.rows;
      if (!thread) {
        thread = startParquetThread(columns);
        // Only once it runs: a thread started under `sizeForMemory`'s flags would be slower.
        await thread.online;
        sizeForMemory?.();
        groups = new EncodedGroups(thread, output, progress);
      }
      spare.give(groups!.takeSpare());
      groups!.hand(builder.take(spare));
      await groups!.writeOut(GROUPS_AHEAD);
      if (output.gone) return { rows: groups!.written, finished: true };
    }
    rows += builder.rows;
    if (!thread || !groups) {
      await output.write(encoder.encodeGroups([builder.take()]));
      progress?.update(rows);
      return { rows, finished: false };
    }
    if (builder.rows > 0) groups.hand(builder.take());
    await groups.writeOut(0);
    if (!output.gone) await output.write((await thread.finish()).chunks);
    return { rows, finished: true };
  } finally {
    source.return?.();
    await thread?.close();
  }
}

/** Row groups handed to the Parquet thread before the one being written is back. */
const GROUPS_AHEAD = 2;

/** The pages after the first, asked for in order, ahead of the one being written. */
class PageQueue {
  readonly #asked: Promise<Page>[] = [];
  /** Where the next page starts (exclusive); undefined once the last page is asked for. */
  #lo: ExportKey | undefined;

  constructor(
    private readonly store: Store,
    private readonly query: ExportQuery,
    private readonly readers: PageReaders,
    /** Where the pages asked for start (exclusive); undefined when there are none. */
    firstPageEnd: ExportKey | undefined,
    private readonly pageRows: number,
  ) {
    this.#lo = firstPageEnd;
  }

  /** Asks the readers for the next page, unless the last one is asked for already. */
  askNext(spare: ArrayBuffer[] = []): void {
    const lo = this.#lo;
    if (lo === undefined) return;
    const hi = this.store.exports.keyAt(this.query, lo, this.pageRows) ?? null;
    const page = this.readers.read({ lo, hi }, spare);
    // A page that fails before its turn is reported at its turn, not as an unhandled rejection.
    page.catch(() => undefined);
    this.#asked.push(page);
    this.#lo = hi ?? undefined;
  }

  /** The next page in order, or undefined after the last. */
  next(): Promise<Page> | undefined {
    return this.#asked.shift();
  }
}

async function pump(
  source: IterableIterator<ExportRow>,
  encoder: RowEncoder,
  output: ExportOutput,
  batchRows: number,
  progress: ExportProgress | undefined,
): Promise<number> {
  let rows = 0;
  let batch: ExportRow[] = [];
  try {
    for (const row of source) {
      batch.push(row);
      if (batch.length < batchRows) continue;
      rows += batch.length;
      await output.write(encoder.encode(batch));
      batch = [];
      progress?.update(rows);
      if (output.gone) return rows;
    }
    rows += batch.length;
    if (batch.length > 0) await output.write(encoder.encode(batch));
    progress?.update(rows);
    return rows;
  } finally {
    // Ends the statement when the loop stopped early (a closed pipe, an error).
    source.return?.();
  }
}

export type { ExportFilter };
