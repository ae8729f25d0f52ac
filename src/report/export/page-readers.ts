/**
 * Page readers: worker threads that each open their own read-only connection to the database,
 * read pages of an export (`ExportReader.page`) and encode them as JSONL or CSV lines, handing
 * back UTF-8 bytes (moved, not copied). Reading a row from SQLite costs about as much as
 * encoding it, and both run on one core on the main thread; two readers keep two cores busy
 * while the main thread only chooses pages and writes them, in order.
 *
 * For Parquet a page is a row group's rows: the reader gathers its values column by column
 * (`RowGroupBuilder`) and hands them over as bytes, to be encoded on the Parquet thread.
 */
import { Worker } from 'node:worker_threads';
import type { ExportQuery, PageBounds } from '../../store/index.ts';
import type { RowGroupData } from './parquet.ts';
import { threadCalls } from './thread-calls.ts';

/** Formats whose pages are lines of text, encoded apart and joined as they come. */
export type LineFormat = 'jsonl' | 'csv';

export interface PageReaderData {
  dbPath: string;
  /** `parquet`: pages come back as row groups' values, not as text. */
  format: LineFormat | 'parquet';
  query: ExportQuery;
  /** Parquet: rows of a row group at most (a page holds no more). */
  rowGroupRows?: number;
  /** CSV: text cells as they are, formulas included (csv.ts). */
  csvRaw?: boolean | undefined;
}
/** A call to a reader: a page to read, and buffers of pages written out already, to fill again (moved). */
export interface PageCall {
  bounds: PageBounds;
  spare: ArrayBuffer[];
}

export interface Page {
  rows: number;
  /** The page's encoded rows, in order (JSONL, CSV). */
  chunks: Uint8Array[];
  /** The page's row groups, in order (Parquet). */
  groups?: RowGroupData[];
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
/**
 * Old generation of a Parquet reader, in MB. A page's values are kept until it is handed over,
 * so they outlive the young generation; without a bound V8 lets that garbage pile up to some
 * 60 MB per thread before a first full collection. The bound is safe: what a reader holds at
 * once is one row and a page's repeating values, its text being bytes outside the heap (long
 * text comes from SQLite as BLOBs: `LONG_TEXT_COLUMNS` in src/store/queries/export.ts).
 */
const PARQUET_OLD_GENERATION_MB = 24;

/** Starts `threads` readers; they take pages in turn. */
export function startPageReaders(data: PageReaderData, threads: number): PageReaders {
  const readers = Array.from({ length: threads }, () =>
    threadCalls<PageCall, Page>(
      new Worker(ENTRY, {
        workerData: data,
        // A page's rows and text die young: a small young generation collects them early.
        resourceLimits: {
          maxYoungGenerationSizeMb: YOUNG_GENERATION_MB,
          ...(data.format === 'parquet'
            ? { maxOldGenerationSizeMb: PARQUET_OLD_GENERATION_MB }
            : {}),
        },
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
