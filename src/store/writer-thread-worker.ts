/**
 * The SQLite writer thread (see writer-thread.ts): opens its own connection to the database and
 * commits the batches the main thread posts, in order.
 *
 * Batches that arrived while the last commit ran are committed together, in one transaction:
 * each commit of a durable database waits for the disk (synchronous = FULL), so a writer that
 * falls behind catches up with fewer, larger commits instead of queueing one per batch. Each
 * batch is answered only once that transaction is committed. Should it fail, every batch is
 * tried again in a transaction of its own, so one batch cannot take others down with it. A
 * message carries the batches of one tick of the main thread; each keeps its own outcome.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { commitEvents } from './commit.ts';
import { openStore } from './db.ts';
import type { BatchOutcome, FromWriter, ToWriter, WriterData } from './writer-thread.ts';

/** One batch of a message, answered in that message's outcomes. */
interface Batch {
  events: unknown[];
  outcome?: BatchOutcome;
}

const port = parentPort;
if (!port) throw new Error('writer-thread-worker.ts runs only as a worker thread');
const { dbPath, busyTimeoutMs } = workerData as WriterData;
const store = openStore(dbPath, { busyTimeoutMs });
const post = (message: FromWriter) => port.postMessage(message);
const failure = (error: unknown): BatchOutcome => ({
  failed: error instanceof Error ? error.message : String(error),
});

function commitOne(batch: Batch): void {
  try {
    batch.outcome = { rejected: commitEvents(store, batch.events).rejected };
  } catch (error) {
    batch.outcome = failure(error);
  }
}

function commitTogether(batches: readonly Batch[]): void {
  if (batches.length === 1) {
    commitOne(batches[0]!);
    return;
  }
  let report: ReturnType<typeof commitEvents>;
  try {
    report = commitEvents(
      store,
      batches.flatMap((b) => b.events),
    );
  } catch {
    for (const batch of batches) commitOne(batch);
    return;
  }
  // Rejected events carry their index in the joined batch: give each batch its own.
  let start = 0;
  for (const batch of batches) {
    const end = start + batch.events.length;
    const rejected =
      report.rejected.length === 0
        ? []
        : report.rejected
            .filter((r) => r.index >= start && r.index < end)
            .map((r) => ({ ...r, index: r.index - start }));
    batch.outcome = { rejected };
    start = end;
  }
}

port.on('message', (first: ToWriter) => {
  const writes: { id: number; batches: Batch[] }[] = [];
  let close = false;
  for (let message: ToWriter | undefined = first; message; ) {
    if (message.type === 'close') {
      close = true;
      break;
    }
    writes.push({ id: message.id, batches: message.batches.map((events) => ({ events })) });
    message = receiveMessageOnPort(port)?.message as ToWriter | undefined;
  }
  if (writes.length > 0) {
    commitTogether(writes.flatMap((w) => w.batches));
    for (const w of writes) {
      const outcomes = w.batches.map((b) => b.outcome ?? failure('not committed'));
      post({ type: 'done', id: w.id, outcomes });
    }
  }
  if (close) {
    store.close();
    port.close();
  }
});
post({ type: 'ready' });
