/**
 * An export page reader (see page-readers.ts): opens its own read-only connection, then reads
 * and encodes the pages the main thread asks for, one at a time, in the order asked.
 *
 * A page's rows are encoded a few at a time and written as UTF-8 into buffers of about 1 MB,
 * which are handed over, not copied: no string grows past a batch's, so the heap only ever
 * holds short-lived text (a page's text as one string would be a large object, kept until a
 * full collection), and no page is encoded twice (text, then bytes).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { ExportRow } from '../../store/queries/export.ts';
import { openExportConnection } from '../../store/queries/export-connection.ts';
import { csvLines } from './csv.ts';
import { jsonlLines } from './jsonl.ts';
import type { Page, PageCall, PageReaderData } from './page-readers.ts';
import { groupBuffers, RowGroupBuilder, type RowGroupData } from './parquet.ts';
import { SpareBuffers } from './spare-buffers.ts';
import { answerCalls } from './thread-calls.ts';

/** Rows encoded into one string before it is written into the page's bytes. */
const BATCH_ROWS = 64;
/** Size of a page's byte buffers; a longer batch gets a buffer of its own size. */
const CHUNK_BYTES = 1024 * 1024;

const port = parentPort;
if (!port) throw new Error('page-worker.ts runs only as a worker thread');
const { dbPath, format, query, rowGroupRows, csvRaw } = workerData as PageReaderData;
const store = openExportConnection(dbPath);
const encode = format === 'csv' ? csvLines(query.columns, { csvRaw }) : jsonlLines(query.columns);
const builder =
  format === 'parquet' ? new RowGroupBuilder(query.columns, { rowGroupRows }) : undefined;

/**
 * Buffers handed back to fill again: of pages the main thread has written out (JSONL, CSV), or
 * of row groups the Parquet thread has encoded.
 */
const spare = new SpareBuffers();

function buffer(bytes: number): Buffer {
  return Buffer.from(spare.buffer(Math.max(CHUNK_BYTES, bytes)));
}

/** The bytes of one page, as they are written. */
class PageBytes {
  readonly chunks: Uint8Array[] = [];
  #buffer: Buffer = Buffer.alloc(0);
  #size = 0;

  add(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    const most = text.length * 3;
    if (this.#size + most > this.#buffer.length) {
      this.#close();
      this.#buffer = buffer(most);
    }
    this.#size += this.#buffer.write(text, this.#size);
  }

  /** The chunks written, and the buffers to hand over. */
  done(): { chunks: Uint8Array[]; buffers: ArrayBuffer[] } {
    this.#close();
    return { chunks: this.chunks, buffers: this.chunks.map((c) => c.buffer as ArrayBuffer) };
  }

  #close(): void {
    if (this.#size > 0) this.chunks.push(this.#buffer.subarray(0, this.#size));
    this.#size = 0;
  }
}

function readPage({ bounds, spare: handedBack }: PageCall): {
  value: Page;
  transfer: ArrayBuffer[];
} {
  spare.give(handedBack);
  const bytes = new PageBytes();
  let rows = 0;
  let batch: ExportRow[] = [];
  for (const row of store.exports.iteratePage(query, bounds)) {
    batch.push(row);
    if (batch.length < BATCH_ROWS) continue;
    bytes.add(encode(batch));
    rows += batch.length;
    batch = [];
  }
  if (batch.length > 0) bytes.add(encode(batch));
  rows += batch.length;
  const { chunks, buffers } = bytes.done();
  return { value: { rows, chunks }, transfer: buffers };
}

/** A Parquet page: its rows' values, as row groups (more than one when its text is long). */
function readGroups(builder: RowGroupBuilder, { bounds, spare: handedBack }: PageCall) {
  spare.give(handedBack);
  const groups: RowGroupData[] = [];
  let rows = 0;
  for (const row of store.exports.iteratePage(query, bounds)) {
    rows++;
    if (builder.push(row)) groups.push(builder.take(spare));
  }
  if (builder.rows > 0) groups.push(builder.take(spare));
  const value: Page = { rows, chunks: [], groups };
  return { value, transfer: groups.flatMap(groupBuffers) };
}

answerCalls(port, builder ? (call: PageCall) => readGroups(builder, call) : readPage);
