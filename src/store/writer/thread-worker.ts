/**
 * The SQLite writer thread (see writer-thread.ts): opens its own connection to the database and
 * commits the batches the main thread posts, in order.
 *
 * Batches that arrived while the last commit ran are committed together, in one transaction:
 * each commit of a durable database waits for the disk (synchronous = FULL), so a writer that
 * falls behind catches up with fewer, larger commits instead of queueing one per batch. Each
 * batch is answered only once that transaction is committed. Should it fail, every batch is
 * tried again in a transaction of its own, so one batch cannot take others down with it.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { openStore } from '../db.ts';
import type { FromWriter, ToWriter, WriterData } from './thread.ts';

type Write = Extract<ToWriter, { type: 'write' }>;

const port = parentPort;
if (!port) throw new Error('writer-thread-worker.ts runs only as a worker thread');
const { dbPath, busyTimeoutMs } = workerData as WriterData;
const store = openStore(dbPath, { busyTimeoutMs });
const post = (message: FromWriter) => port.postMessage(message);

function commitOne(write: Write): void {
  try {
    const { rejected } = store.applyEvents(write.events);
    post({ type: 'done', id: write.id, rejected });
  } catch (error) {
    post({
      type: 'failed',
      id: write.id,
      message: error instanceof Error ? error.message : String(error),
    });
  }
}

function commitTogether(writes: readonly Write[]): void {
  if (writes.length === 1) {
    commitOne(writes[0]!);
    return;
  }
  let report: ReturnType<typeof store.applyEvents>;
  try {
    report = store.applyEvents(writes.flatMap((w) => w.events));
  } catch {
    for (const write of writes) commitOne(write);
    return;
  }
  // Rejected events carry their index in the joined batch: give each batch its own.
  let start = 0;
  for (const write of writes) {
    const end = start + write.events.length;
    const rejected = report.rejected
      .filter((r) => r.index >= start && r.index < end)
      .map((r) => ({ ...r, index: r.index - start }));
    post({ type: 'done', id: write.id, rejected });
    start = end;
  }
}

port.on('message', (first: ToWriter) => {
  const writes: Write[] = [];
  let close = false;
  for (let message: ToWriter | undefined = first; message; ) {
    if (message.type === 'close') {
      close = true;
      break;
    }
    writes.push(message);
    message = receiveMessageOnPort(port)?.message as ToWriter | undefined;
  }
  if (writes.length > 0) commitTogether(writes);
  if (close) {
    store.close();
    port.close();
  }
});
post({ type: 'ready' });
