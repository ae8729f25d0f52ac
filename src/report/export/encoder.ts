/** What every export format implements: rows in, bytes (or text) out, in order. */
import type { ExportRow } from '../../store/index.ts';

/** Text (written as UTF-8) or bytes; an empty string or array means nothing to write yet. */
export type Chunk = string | Uint8Array | readonly Uint8Array[];

export interface RowEncoder {
  /** Encodes a batch of rows; a format that buffers (Parquet) may return nothing yet. */
  encode(rows: readonly ExportRow[]): Chunk;
  /** What closes the output: the rest of the buffer and a footer, or nothing. */
  finish(): Chunk;
}
