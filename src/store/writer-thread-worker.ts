/**
 * The SQLite writer thread (see writer-thread.ts): opens its own connection to the database and
 * commits the batches the main thread posts, one transaction each, in order.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { commitEvents } from './commit.ts';
import { openStore } from './db.ts';
import type { FromWriter, ToWriter, WriterData } from './writer-thread.ts';

const port = parentPort;
if (!port) throw new Error('writer-thread-worker.ts runs only as a worker thread');
const { dbPath, busyTimeoutMs } = workerData as WriterData;
const store = openStore(dbPath, { busyTimeoutMs });
const post = (message: FromWriter) => port.postMessage(message);

port.on('message', (message: ToWriter) => {
  if (message.type === 'close') {
    store.close();
    port.close();
    return;
  }
  try {
    const { rejected } = commitEvents(store, message.events);
    post({ type: 'done', id: message.id, rejected });
  } catch (error) {
    post({
      type: 'failed',
      id: message.id,
      message: error instanceof Error ? error.message : String(error),
    });
  }
});
post({ type: 'ready' });
