/**
 * Page readers: worker threads that each open their own read-only connection to the database,
 * read pages of an export (`ExportReader.page`) and encode them as JSONL or CSV lines, handing
 * back UTF-8 bytes (moved, not copied). Reading a row from SQLite costs about as much as
 * encoding it, and both run on one core on the main thread; two readers keep two cores busy
 * while the main thread only chooses pages and writes them, in order.
 */
import { Worker } from 'node:worker_threads';
import type { ExportQuery, PageBounds } from '../../store/index.ts';
import { threadCalls } from './thread-calls.ts';

/** Formats whose pages are lines of text, encoded apart and joined as they come. */
export type LineFormat = 'jsonl' | 'csv';

export interface PageReaderData {
  dbPath: string;
  format: LineFormat;
  query: ExportQuery;
}
/** A call to a reader: a page to read, and buffers of pages written out already, to fill again (moved). */
export interface PageCall {
  bounds: PageBounds;
  spare: ArrayBuffer[];
}

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

/** Starts `threads` readers; they take pages in turn. */
export function startPageReaders(data: PageReaderData, threads: number): PageReaders {
  const readers = Array.from({ length: threads }, () =>
    threadCalls<PageCall, Page>(
      new Worker(ENTRY, {
        workerData: data,
        // A page's rows and text die young: a small young generation collects them early.
        resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
      }),
      'an export reader thread',
    ),
  );
  let next = 0;
  return {
    read: (bounds, spare = []) => readers[next++ % threads]!.call({ bounds, spare }, spare),
    async close() {
      await Promise.all(readers.map((r) => r.close()));
    },
  };
}
