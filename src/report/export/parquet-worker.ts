/** The Parquet thread (see parquet-thread.ts): encodes the row groups it is given, in order. */
import { parentPort, workerData } from 'node:worker_threads';
import type { ExportColumn } from '../../store/index.ts';
import { createParquetEncoder, groupBuffers } from './parquet.ts';
import type { Encoded, ParquetCall } from './parquet-thread.ts';
import { SpareBuffers } from './spare-buffers.ts';
import { answerCalls } from './thread-calls.ts';

const port = parentPort;
if (!port) throw new Error('parquet-worker.ts runs only as a worker thread');
const { columns } = workerData as { columns: ExportColumn[] };
const spare = new SpareBuffers();
const encoder = createParquetEncoder(columns, { spare });

answerCalls(port, (call: ParquetCall) => {
  let value: Encoded;
  if (call.type === 'group') {
    spare.give(call.spare);
    // The row group's buffers go back with its bytes, to be filled with another row group.
    value = { chunks: encoder.encodeGroups([call.group]), spare: groupBuffers(call.group) };
  } else {
    value = { chunks: encoder.finish() as Uint8Array[], spare: [] };
  }
  // Each chunk has a buffer of its own (the encoder's `take`): moved to the main thread as it is.
  return { value, transfer: [...value.chunks.map((c) => c.buffer as ArrayBuffer), ...value.spare] };
});
