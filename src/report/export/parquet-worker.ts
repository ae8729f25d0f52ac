/** The Parquet thread (see parquet-thread.ts): encodes the row groups it is given, in order. */
import { parentPort, workerData } from 'node:worker_threads';
import type { ExportColumn } from '../../store/index.ts';
import { createParquetEncoder } from './parquet.ts';
import type { ParquetCall } from './parquet-thread.ts';
import { answerCalls } from './thread-calls.ts';

const port = parentPort;
if (!port) throw new Error('parquet-worker.ts runs only as a worker thread');
const { columns } = workerData as { columns: ExportColumn[] };
const encoder = createParquetEncoder(columns);

answerCalls(port, (call: ParquetCall) => {
  // Each chunk has a buffer of its own (the encoder's `take`): moved to the main thread as it is.
  const chunks =
    call.type === 'group' ? encoder.encodeGroups([call.group]) : (encoder.finish() as Uint8Array[]);
  return { value: chunks, transfer: chunks.map((c) => c.buffer as ArrayBuffer) };
});
