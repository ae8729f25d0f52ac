/**
 * `harvest export`: checks the request against the store (unknown run, pipeline or field is bad
 * input, exit 2), opens the output (an unwritable path fails before any work), then streams the
 * rows from SQLite through the format's encoder in small batches. Memory holds one batch (one
 * row group for Parquet), whatever the number of rows.
 */
import {
  buildExportQuery,
  EXPORT_COLUMNS,
  type ExportFilter,
  type ExportKind,
  type ExportRow,
  type Store,
} from '../../store/index.ts';
import { createCsvEncoder } from './csv.ts';
import type { RowEncoder } from './encoder.ts';
import { resolveFields } from './fields.ts';
import type { ExportFormat } from './formats.ts';
import { createJsonlEncoder } from './jsonl.ts';
import { type ExportOutput, openFileOutput, streamOutput } from './output.ts';
import { createParquetEncoder } from './parquet.ts';
import { type RunFilterInput, resolveRunFilter } from './resolve.ts';

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
}

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

function encoderFor(format: ExportFormat, columns: Parameters<typeof createCsvEncoder>[0]) {
  if (format === 'csv') return createCsvEncoder(columns);
  if (format === 'parquet') return createParquetEncoder(columns);
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
  const query = buildExportQuery(columns, filter, build);
  const output = options.out === undefined ? streamOutput(io.stdout) : openFileOutput(options.out);
  const encoder = encoderFor(options.format, columns);
  let rows = 0;
  try {
    if (io.progress) {
      // Counting is a second pass over the rows; only worth it for a live bar.
      const counting = buildExportQuery([EXPORT_COLUMNS[kind][0]!], filter, build);
      io.progress.start(store.exports.count(counting));
    }
    rows = await pump(
      store.exports.iterate(query),
      encoder,
      output,
      options.batchRows ?? 256,
      io.progress,
    );
    if (!output.gone) await output.write(encoder.finish());
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
