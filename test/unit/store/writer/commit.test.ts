/**
 * The writer's group commit (src/store/writer/commit.ts) on a real temp database: each
 * transaction goes through `commitHere`, counted, and held open where a test needs a commit
 * under way.
 */
import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { RejectedEvent, Store } from '../../../../src/store/index.ts';
import {
  type CommitBatches,
  commitHere,
  databaseBusy,
  directWriter,
  GroupCommit,
} from '../../../../src/store/writer/commit.ts';
import { callEvent, refuseCallsOf, seedRun, taskEvent, useTempStores } from '../helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

/** `commitHere` on `store`, each transaction's batch sizes kept; `hold` keeps the next ones open. */
function counted(store: Store) {
  const transactions: number[][] = [];
  let gate: Promise<void> | undefined;
  let open: () => void = () => {};
  const commit: CommitBatches = async (batches) => {
    transactions.push(batches.map((b) => b.length));
    await gate;
    return commitHere(store, batches);
  };
  return {
    commit,
    transactions,
    hold() {
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    release() {
      gate = undefined;
      open();
    },
  };
}

describe('GroupCommit', () => {
  const stores = useTempStores();

  it('commits a lone write at once, and the writes made meanwhile together in the next transaction', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 4 });
    const c = counted(store);
    const group = new GroupCommit(c.commit);
    c.hold();
    const first = group.write([taskEvent(runId, 't0', 'done', T0)]);
    expect(c.transactions).toEqual([[1]]);
    const later = [
      group.write([callEvent(runId, 't1'), taskEvent(runId, 't1', 'done', T0)]),
      group.write([{ type: 'task', runId }, taskEvent(runId, 't2', 'done', T0)]),
      group.write([{ type: 'nonsense' }, callEvent(runId, 't3'), { type: 'call' }]),
    ];
    expect(c.transactions).toEqual([[1]]);
    c.release();
    expect(await first).toEqual([]);
    const rejected = await Promise.all(later);
    expect(c.transactions).toEqual([[1], [2, 2, 3]]);
    // Each write is told its own rejections, indexed in its own events.
    expect(rejected.map((r: RejectedEvent[]) => r.map((x) => x.index))).toEqual([[], [0], [0, 2]]);
    expect(store.tasks.counts(runId)).toMatchObject({ done: 3 });
    expect(store.calls.totals(runId).calls).toBe(2);
  });

  it('a write waits up to its waitMs for company, and no longer once enough writes wait', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 3 });
    const c = counted(store);
    const group = new GroupCommit(c.commit);
    const waiting = { waitMs: 60_000, enoughWrites: 3 };
    const writes = [
      group.write([taskEvent(runId, 't0', 'done', T0)], waiting),
      group.write([taskEvent(runId, 't1', 'done', T0)], waiting),
    ];
    expect(c.transactions).toEqual([]);
    writes.push(group.write([taskEvent(runId, 't2', 'done', T0)], waiting));
    await Promise.all(writes);
    expect(c.transactions).toEqual([[1, 1, 1]]);

    // Alone, it goes once its wait is over.
    const { runId: other } = seedRun(store, { taskCount: 1 });
    await group.write([taskEvent(other, 't0', 'done', T0)], { waitMs: 5 });
    expect(c.transactions).toEqual([[1, 1, 1], [1]]);
  });

  it('drain commits what waits and resolves once nothing does', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 1 });
    const c = counted(store);
    const group = new GroupCommit(c.commit);
    const write = group.write([taskEvent(runId, 't0', 'done', T0)], { waitMs: 60_000 });
    await group.drain();
    expect(c.transactions).toEqual([[1]]);
    await expect(write).resolves.toEqual([]);
  });

  it('a transaction that fails is tried again write by write: one write cannot take the others down', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 3 });
    // A call the database refuses (as a broken file would) aborts its transaction.
    refuseCallsOf(store.path, 't1');
    const c = counted(store);
    const group = new GroupCommit(c.commit);
    const waiting = { waitMs: 60_000, enoughWrites: 3 };
    const outcomes = await Promise.allSettled([
      group.write([callEvent(runId, 't0'), taskEvent(runId, 't0', 'done', T0)], waiting),
      group.write([callEvent(runId, 't1')], waiting),
      group.write([taskEvent(runId, 't2', 'done', T0)], waiting),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(c.transactions).toEqual([[2, 1, 1], [2], [1], [1]]);
    expect(store.tasks.counts(runId)).toMatchObject({ done: 2 });
  });

  it('a database locked past its busy timeout fails every write of the transaction at once', async () => {
    const store = stores.open({ busyTimeoutMs: 20 });
    const { runId } = seedRun(store, { taskCount: 2 });
    const other = new Sqlite(store.path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const c = counted(store);
      const group = new GroupCommit(c.commit);
      const waiting = { waitMs: 60_000, enoughWrites: 2 };
      const outcomes = await Promise.allSettled([
        group.write([taskEvent(runId, 't0', 'done', T0)], waiting),
        group.write([taskEvent(runId, 't1', 'done', T0)], waiting),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
      expect(databaseBusy((outcomes[0] as PromiseRejectedResult).reason)).toBe(true);
      // Alone, each would have waited out the lock again: they are not tried so.
      expect(c.transactions).toEqual([[1, 1]]);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
  });

  it('directWriter commits a write that does not wait before it returns, as it always has', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    const writer = directWriter(store);
    const written = writer.write([taskEvent(runId, 't0', 'done', T0)]);
    expect(store.tasks.counts(runId).done).toBe(1);
    await written;
    const waiting = writer.write([taskEvent(runId, 't1', 'done', T0)], { waitMs: 60_000 });
    expect(store.tasks.counts(runId).done).toBe(1);
    await writer.close();
    await expect(waiting).resolves.toEqual([]);
    expect(store.tasks.counts(runId).done).toBe(2);
  });
});
