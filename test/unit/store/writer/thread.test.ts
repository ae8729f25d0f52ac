import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { databaseBusy } from '../../../../src/store/writer/commit.ts';
import { StoreWriterThread } from '../../../../src/store/writer/thread.ts';
import { capturedLogger } from '../../../helpers/logger.ts';
import {
  callEvent,
  refuseCallsOf,
  resultsEvent,
  seedRun,
  taskEvent,
  useTempStores,
  webItem,
} from '../helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

describe('StoreWriterThread', () => {
  const stores = useTempStores();
  const threads: StoreWriterThread[] = [];
  afterEach(async () => {
    for (const t of threads.splice(0)) await t.close();
  });

  it('commits batches on its own connection, finishes runs, and reports rejected events', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    const thread = await StoreWriterThread.start(store, capturedLogger().logger);
    threads.push(thread);
    const [first, second] = await Promise.all([
      thread.write([
        callEvent(runId, 't0', { creditsUsed: 2 }),
        resultsEvent(runId, 't0', [webItem(1)]),
        taskEvent(runId, 't0', 'done', T0),
      ]),
      thread.write([{ type: 'call', runId }, taskEvent(runId, 't1', 'done', T0)]),
    ]);
    expect(first).toEqual([]);
    expect(second.map((r) => r.index)).toEqual([0]);
    // Written by the thread, read here through the main connection.
    expect(store.tasks.counts(runId)).toMatchObject({ done: 2, total: 2 });
    expect(store.calls.totals(runId).creditsUsed).toBe(2);
    expect(store.results.count(runId)).toBeGreaterThan(0);
    expect(store.runs.get(runId)?.status).toBe('completed');
  });

  it('writes made while a commit runs share the next, yet a write that fails takes no other down', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 3 });
    // A call the database refuses (as a full disk or a broken file would) aborts its transaction.
    refuseCallsOf(store.path, 't1');
    const thread = await StoreWriterThread.start(store, capturedLogger().logger);
    threads.push(thread);
    // The first goes at once; the two made meanwhile go together in the next transaction.
    const writes = [
      thread.write([callEvent(runId, 't0'), taskEvent(runId, 't0', 'done', T0)]),
      thread.write([callEvent(runId, 't1')]),
      thread.write([{ type: 'task', runId }, taskEvent(runId, 't2', 'done', T0)]),
    ];
    const [first, broken, third] = await Promise.allSettled(writes);
    expect(first).toEqual({ status: 'fulfilled', value: [] });
    expect(broken).toMatchObject({ status: 'rejected', reason: { message: /refused/ } });
    expect(third).toMatchObject({ status: 'fulfilled', value: [{ index: 0 }] });
    expect(store.tasks.counts(runId)).toMatchObject({ done: 2, total: 3 });
    expect(store.calls.totals(runId).calls).toBe(1);
  });

  it('a database locked past the busy timeout fails the writes with the reason, SQLite code and all', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    const thread = await StoreWriterThread.start(store, capturedLogger().logger, 20);
    threads.push(thread);
    const other = new Sqlite(store.path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const outcomes = await Promise.allSettled([
        thread.write([taskEvent(runId, 't0', 'done', T0)]),
        thread.write([taskEvent(runId, 't1', 'done', T0)]),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
      for (const o of outcomes) {
        const reason = (o as PromiseRejectedResult).reason;
        expect(String(reason)).toMatch(/SQLite writer: database is locked/);
        expect(databaseBusy(reason)).toBe(true);
      }
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    await thread.write([taskEvent(runId, 't0', 'done', T0)]);
    expect(store.tasks.counts(runId).done).toBe(1);
  });

  it('refuses to start, with the reason, when the thread cannot open the database', async () => {
    const store = stores.open();
    const unopenable = { ...store, path: path.join(store.path, 'not-a-dir', 'x.db') };
    await expect(StoreWriterThread.start(unopenable, capturedLogger().logger)).rejects.toThrow(
      /not a folder/i,
    );
  });

  it('after the thread dies, writes run on the calling thread and nothing is lost', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    const { logger } = capturedLogger();
    const thread = await StoreWriterThread.start(store, logger);
    threads.push(thread);
    await thread.write([taskEvent(runId, 't0', 'done', T0)]);
    await thread.terminate();
    await thread.write([callEvent(runId, 't1'), taskEvent(runId, 't1', 'done', T0)]);
    expect(store.tasks.counts(runId)).toMatchObject({ done: 2 });
    expect(store.runs.get(runId)?.status).toBe('completed');
  });

  it('a batch written while the thread closes, or after, is committed, not dropped', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    const thread = await StoreWriterThread.start(store, capturedLogger().logger);
    const closing = thread.close();
    await thread.write([taskEvent(runId, 't0', 'done', T0)]);
    await closing;
    await thread.write([taskEvent(runId, 't1', 'done', T0)]);
    expect(store.tasks.counts(runId)).toMatchObject({ done: 2 });
  });

  it('a batch the thread had not answered when it died is committed here, once, and logged', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 1 });
    const { logger, lines } = capturedLogger();
    const thread = await StoreWriterThread.start(store, logger);
    threads.push(thread);
    // The thread is told to stop before the batch reaches it: it can never answer it.
    const stopped = thread.terminate();
    const pending = thread.write([callEvent(runId, 't0'), taskEvent(runId, 't0', 'done', T0)]);
    await stopped;
    await expect(pending).resolves.toEqual([]);
    expect(store.calls.totals(runId).calls).toBe(1);
    expect(store.tasks.counts(runId)).toMatchObject({ done: 1 });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 50, // error
        batches: 1,
        msg: 'SQLite writer thread stopped; committing its unanswered batches on the main thread',
      }),
    ]);
  });

  it('a thread that dies with nothing unanswered logs nothing', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 1 });
    const { logger, lines } = capturedLogger();
    const thread = await StoreWriterThread.start(store, logger);
    threads.push(thread);
    await thread.write([taskEvent(runId, 't0', 'done', T0)]);
    await thread.terminate();
    expect(lines).toEqual([]);
  });
});
