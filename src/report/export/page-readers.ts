/**
 * Page readers: worker threads that each open their own read-only connection to the database,
 * read pages of an export (`ExportReader.page`) and encode them as JSONL or CSV lines, handing
 * back UTF-8 bytes (moved, not copied). Reading a row from SQLite costs about as much as
 * encoding it, and both run on one core on the main thread; two readers keep two cores busy
 * while the main thread only chooses pages and writes them, in order.
 */
import { Worker } from 'node:worker_threads';
import type { ExportQuery, PageBounds } from '../../store/index.ts';

/** Formats whose pages are lines of text, encoded apart and joined as they come. */
export type LineFormat = 'jsonl' | 'csv';

export interface PageReaderData {
  dbPath: string;
  format: LineFormat;
  query: ExportQuery;
}
export type ToPageReader =
  | {
      type: 'page';
      id: number;
      bounds: PageBounds;
      /** Buffers of pages already written, to fill again (moved). */
      spare: ArrayBuffer[];
    }
  | { type: 'close' };
export type FromPageReader =
  | { type: 'ready' }
  | { type: 'page'; id: number; rows: number; chunks: Uint8Array[] }
  | { type: 'failed'; id: number; message: string };

export interface Page {
  rows: number;
  /** The page's encoded rows, in order. */
  chunks: Uint8Array[];
}

export interface PageReaders {
  /**
   * Reads and encodes a page. `spare`: buffers of pages written out already, which the thread
   * may fill again (they are moved to it).
   */
  read(bounds: PageBounds, spare?: ArrayBuffer[]): Promise<Page>;
  /** Stops the threads (pages not yet answered are rejected). */
  close(): Promise<void>;
}

// Compiled (dist/), the worker module runs as it is; from the sources, an entry registers tsx.
const ENTRY = import.meta.url.endsWith('.js')
  ? new URL('./page-worker.js', import.meta.url)
  : new URL('./page-worker-entry.js', import.meta.url);

const YOUNG_GENERATION_MB = 8;

interface Pending {
  resolve: (page: Page) => void;
  reject: (error: Error) => void;
}

/** Starts `threads` readers; they take pages in turn. */
export function startPageReaders(data: PageReaderData, threads: number): PageReaders {
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let failure: Error | undefined;
  const fail = (error: Error) => {
    failure ??= error;
    for (const p of pending.values()) p.reject(failure);
    pending.clear();
  };
  const workers = Array.from({ length: threads }, () => {
    const worker = new Worker(ENTRY, {
      workerData: data,
      // A page's rows and text die young: a small young generation collects them early.
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    worker.on('message', (message: FromPageReader) => {
      if (message.type === 'ready') return;
      const p = pending.get(message.id);
      if (!p) return;
      pending.delete(message.id);
      if (message.type === 'page') p.resolve({ rows: message.rows, chunks: message.chunks });
      else p.reject(new Error(message.message));
    });
    worker.on('error', fail);
    worker.on('exit', (code) => {
      if (pending.size > 0) fail(new Error(`an export reader thread stopped (exit code ${code})`));
    });
    return worker;
  });
  return {
    read(bounds, spare = []) {
      if (failure) return Promise.reject(failure);
      const id = nextId++;
      const message: ToPageReader = { type: 'page', id, bounds, spare };
      return new Promise<Page>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        workers[id % threads]!.postMessage(message, spare);
      });
    },
    async close() {
      fail(new Error('the export readers were closed'));
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
