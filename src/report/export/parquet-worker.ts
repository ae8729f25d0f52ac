/** The Parquet thread (see parquet-thread.ts): encodes the row groups it is given, in order. */
import { parentPort, workerData } from 'node:worker_threads';
import type { ExportColumn } from '../../store/index.ts';
import { createParquetEncoder } from './parquet.ts';
import type { FromParquetThread, ToParquetThread } from './parquet-thread.ts';

const port = parentPort;
if (!port) throw new Error('parquet-worker.ts runs only as a worker thread');
const { columns } = workerData as { columns: ExportColumn[] };
const encoder = createParquetEncoder(columns);

/** Bytes of their own, to move to the main thread. */
function own(chunks: Uint8Array[]): Uint8Array[] {
  return chunks.map(
    (c) => new Uint8Array(c.buffer.slice(c.byteOffset, c.byteOffset + c.byteLength)),
  );
}

port.on('message', (message: ToParquetThread) => {
  try {
    const out = own(
      message.type === 'group'
        ? encoder.encodeGroups([message.group])
        : (encoder.finish() as Uint8Array[]),
    );
    const answer: FromParquetThread = { type: 'bytes', id: message.id, chunks: out };
    port.postMessage(
      answer,
      out.map((c) => c.buffer as ArrayBuffer),
    );
  } catch (error) {
    const answer: FromParquetThread = {
      type: 'failed',
      id: message.id,
      message: error instanceof Error ? error.message : String(error),
    };
    port.postMessage(answer);
  }
});
