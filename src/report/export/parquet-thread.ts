/**
 * Parquet row groups encoded on a thread of their own: this thread reads the rows from SQLite
 * and gathers each row group's values (`RowGroupBuilder`), the other encodes and compresses
 * them (hyparquet-writer) and hands back the file's bytes, in order. The two overlap, and the
 * encoding runs in a heap sized for it (a small young generation) rather than for the whole
 * process.
 */
import { Worker } from 'node:worker_threads';
import type { ExportColumn } from '../../store/index.ts';
import { groupBuffers, type RowGroupData } from './parquet.ts';
import { threadCalls } from './thread-calls.ts';

/**
 * A row group to encode, with buffers of bytes written out already (to be filled again), or
 * `finish` for the rest of the file.
 */
export type ParquetCall =
  | { type: 'group'; group: RowGroupData; spare: ArrayBuffer[] }
  | { type: 'finish' };

/** The bytes a call adds to the file, and the buffers of the row group it encoded (to refill). */
export interface Encoded {
  chunks: Uint8Array[];
  spare: ArrayBuffer[];
}

export interface ParquetThread {
  /** Resolves once the thread runs (its V8 flags are set then). */
  readonly online: Promise<void>;
  /**
   * Encodes a row group (its buffers are moved there, and come back in the answer); `spare`:
   * buffers of bytes written out already, for the thread to fill again.
   */
  write(group: RowGroupData, spare?: ArrayBuffer[]): Promise<Encoded>;
  /** The rest of the file (the footer). */
  finish(): Promise<Encoded>;
  close(): Promise<void>;
}

const ENTRY = import.meta.url.endsWith('.js')
  ? new URL('./parquet-worker.js', import.meta.url)
  : new URL('./parquet-worker-entry.js', import.meta.url);
/**
 * A row group's garbage dies young: a young generation of a few MB keeps the thread's heap
 * small; 8 MB encodes faster than 4 at the same peak RSS (test/bench/README.md).
 */
const YOUNG_GENERATION_MB = 8;

export function startParquetThread(columns: readonly ExportColumn[]): ParquetThread {
  const worker = new Worker(ENTRY, {
    workerData: { columns },
    // No bound on its old generation: the writer keeps every row group's metadata for the
    // footer (some 50 kB each, 10 MB for 1M rows), which grows with the export.
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
  });
  const calls = threadCalls<ParquetCall, Encoded>(worker, 'the Parquet thread');
  const online = new Promise<void>((resolve) => {
    worker.once('online', resolve);
    worker.once('exit', () => resolve());
  });
  return {
    online,
    write: (group, spare = []) =>
      calls.call({ type: 'group', group, spare }, [...groupBuffers(group), ...spare]),
    finish: () => calls.call({ type: 'finish' }),
    close: () => calls.close(),
  };
}
