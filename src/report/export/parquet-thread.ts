/**
 * Parquet row groups encoded on a thread of their own: this thread reads the rows from SQLite
 * and gathers each row group's values (`RowGroupBuilder`), the other encodes and compresses
 * them (hyparquet-writer) and hands back the file's bytes, in order. The two overlap, and the
 * encoding runs in a heap sized for it (a small young generation) rather than for the whole
 * process.
 */
import { Worker } from 'node:worker_threads';
import type { ExportColumn } from '../../store/index.ts';
import type { RowGroupData } from './parquet.ts';

export type ToParquetThread =
  | { type: 'group'; id: number; group: RowGroupData }
  | { type: 'finish'; id: number };
export type FromParquetThread =
  | { type: 'bytes'; id: number; chunks: Uint8Array[] }
  | { type: 'failed'; id: number; message: string };

export interface ParquetThread {
  /** Resolves once the thread runs (its V8 flags are set then). */
  readonly online: Promise<void>;
  /** Encodes a row group; resolves with the bytes it adds to the file. */
  write(group: RowGroupData): Promise<Uint8Array[]>;
  /** The rest of the file (the footer). */
  finish(): Promise<Uint8Array[]>;
  close(): Promise<void>;
}

const ENTRY = import.meta.url.endsWith('.js')
  ? new URL('./parquet-worker.js', import.meta.url)
  : new URL('./parquet-worker-entry.js', import.meta.url);
/** A row group's garbage dies young: a small young generation keeps the thread's heap small. */
const YOUNG_GENERATION_MB = 4;

export function startParquetThread(columns: readonly ExportColumn[]): ParquetThread {
  const worker = new Worker(ENTRY, {
    workerData: { columns },
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
  });
  const pending = new Map<
    number,
    { resolve: (c: Uint8Array[]) => void; reject: (e: Error) => void }
  >();
  let failure: Error | undefined;
  let nextId = 0;
  const fail = (error: Error) => {
    failure ??= error;
    for (const p of pending.values()) p.reject(failure);
    pending.clear();
  };
  worker.on('message', (message: FromParquetThread) => {
    const p = pending.get(message.id);
    if (!p) return;
    pending.delete(message.id);
    if (message.type === 'bytes') p.resolve(message.chunks);
    else p.reject(new Error(message.message));
  });
  worker.on('error', fail);
  worker.on('exit', (code) => {
    if (pending.size > 0) fail(new Error(`the Parquet thread stopped (exit code ${code})`));
  });
  const online = new Promise<void>((resolve) => {
    worker.once('online', resolve);
    worker.once('exit', () => resolve());
  });
  const ask = (message: ToParquetThread, transfer: ArrayBuffer[]) => {
    if (failure) return Promise.reject(failure);
    return new Promise<Uint8Array[]>((resolve, reject) => {
      pending.set(message.id, { resolve, reject });
      worker.postMessage(message, transfer);
    });
  };
  return {
    online,
    write(group) {
      const moved = group.columns.flatMap((c) =>
        Array.isArray(c)
          ? []
          : [c.bytes.buffer as ArrayBuffer, (c.ends as Int32Array).buffer as ArrayBuffer],
      );
      return ask({ type: 'group', id: nextId++, group }, moved);
    },
    finish() {
      return ask({ type: 'finish', id: nextId++ }, []);
    },
    async close() {
      fail(new Error('the Parquet thread was closed'));
      await worker.terminate();
    },
  };
}
