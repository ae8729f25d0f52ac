/**
 * The SQLite writer thread (see ./thread.ts): opens its own connection to the database and
 * commits each transaction the main thread posts, in order, answering each once committed. Which
 * writes share a transaction is decided on the main thread (./commit.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openStore } from '../db.ts';
import { joined } from './commit.ts';
import type { FromWriter, ToWriter, WriterData } from './thread.ts';

const port = parentPort;
if (!port) throw new Error('thread-worker.ts runs only as a worker thread');
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
    const { rejected } = store.applyEvents(joined(message.batches));
    post({ type: 'done', id: message.id, rejected });
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    post({
      type: 'failed',
      id: message.id,
      message: error instanceof Error ? error.message : String(error),
      ...(typeof code === 'string' ? { code } : {}),
    });
  }
});
post({ type: 'ready' });
