/** The export formats and how a file name suggests one. Pure, so `--help` stays cheap. */
export const EXPORT_FORMATS = ['jsonl', 'csv', 'parquet'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

const BY_EXTENSION: Record<string, ExportFormat> = {
  '.jsonl': 'jsonl',
  '.ndjson': 'jsonl',
  '.csv': 'csv',
  '.parquet': 'parquet',
};

/** The format a file name's extension (`.csv`, any case) names in `byExtension`, if any. */
export function formatByExtension<F>(file: string, byExtension: Record<string, F>): F | undefined {
  const dot = file.lastIndexOf('.');
  return dot < 0 ? undefined : byExtension[file.slice(dot).toLowerCase()];
}

/** The export format a file name's extension names, if any. */
export function formatOfFile(file: string): ExportFormat | undefined {
  return formatByExtension(file, BY_EXTENSION);
}
