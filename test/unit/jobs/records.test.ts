/**
 * Where a pool's records go (jobs/records.ts): its database writer on a real temp file, the
 * store queue on real Redis under a fresh prefix.
 */
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { durable, QueuedCalls, recordSink } from '../../../jobs/records.ts';
import type { StoreEvent } from '../../../src/events/store.ts';
import { QUEUES } from '../../../src/queue/names.ts';
import { directWriter } from '../../../src/store/index.ts';
import { useCleanup } from '../../helpers/cleanup.ts';
import { capturedLogger } from '../../helpers/logger.ts';
import { testRedis } from '../../helpers/redis.ts';
import { callEvent, seedRun, taskEvent, useTempStores } from '../store/helpers.ts';

const defer = useCleanup();
const T0 = Date.UTC(2025, 0, 2, 9);

function storeQueue() {
  const { prefix, redis } = testRedis(defer);
  const queue = new Queue(QUEUES.store, { connection: redis, prefix });
  defer(() => queue.close());
  return { queue, redis };
}

/** The events waiting in the store queue, job by job. */
async function queuedEvents(queue: Queue): Promise<number[]> {
  const jobs = await queue.getJobs(['waiting'], 0, -1);
  return jobs.map((job) => (job.data as { events: unknown[] }).events.length);
}

describe('durable', () => {
  it('tries a failing write again, with backoff, until it succeeds, and logs each failure', async () => {
    const { logger, lines } = capturedLogger();
    let tries = 0;
    const write = durable(
      async () => {
        tries += 1;
        if (tries < 3) throw new Error('Redis away');
      },
      logger,
      { random: () => 0 },
    );
    await write([callEvent('r', 't0')]);
    expect(tries).toBe(3);
    expect(lines.map((l) => [l.msg, l.attempt, l.delayMs, l.events])).toEqual([
      ['could not record events; trying again', 1, 0, 1],
      ['could not record events; trying again', 2, 0, 1],
    ]);
  });

  it('tries any failure again (a closed database throws a TypeError), and gives up with it after giveUpAfterMs', async () => {
    const { logger, lines } = capturedLogger();
    const failure = new TypeError('The database connection is not open');
    let tries = 0;
    const write = durable(
      async () => {
        tries += 1;
        throw failure;
      },
      logger,
      { random: () => 0, giveUpAfterMs: 30 },
    );
    await expect(write([callEvent('r', 't0')])).rejects.toBe(failure);
    expect(tries).toBeGreaterThan(1);
    expect(lines[0]).toMatchObject({ err: { message: failure.message } });
  });
});

describe('recordSink', () => {
  const stores = useTempStores();

  it('with a writer, commits the records pushed together in one transaction', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    const { queue, redis } = storeQueue();
    const sink = recordSink(directWriter(store), queue, redis, capturedLogger().logger);
    await Promise.all([
      sink.push([callEvent(runId, 't0'), taskEvent(runId, 't0', 'done', T0)]),
      sink.push([callEvent(runId, 't1'), taskEvent(runId, 't1', 'done', T0)]),
    ]);
    await sink.drain();
    expect(store.tasks.counts(runId)).toMatchObject({ done: 2 });
    expect(store.runs.get(runId)?.status).toBe('completed');
    expect(await queuedEvents(queue)).toEqual([]);
  });

  it('sends the events of a commit that fails to the store queue, and says so', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    const { queue, redis } = storeQueue();
    const { logger, lines } = capturedLogger();
    const sink = recordSink(directWriter(store), queue, redis, logger);
    store.close();
    const events: StoreEvent[] = [callEvent(runId, 't0'), taskEvent(runId, 't0', 'done', T0)];
    await sink.push(events);
    await sink.drain();
    expect(await queuedEvents(queue)).toEqual([2]);
    expect(lines.map((l) => l.msg)).toContain(
      'commit failed; the events wait in the store queue, which retries them',
    );
  });

  it('without a writer, adds one store job for the records pushed together', async () => {
    const { queue, redis } = storeQueue();
    const sink = recordSink(undefined, queue, redis, capturedLogger().logger);
    await Promise.all([sink.push([callEvent('r', 't0')]), sink.push([callEvent('r', 't1')])]);
    await sink.drain();
    expect(await queuedEvents(queue)).toEqual([2]);
  });
});

describe('QueuedCalls', () => {
  const call = (n: number): StoreEvent => callEvent('r', `t${n}`);

  it('keeps the call events sent through the store queue, once per call, for a while', () => {
    const kept = new QueuedCalls(1000, 10);
    const [a, b] = [call(1), call(2)];
    kept.note(
      [
        a,
        {
          type: 'task',
          runId: 'r',
          taskKey: 't1',
          status: 'done',
          attempts: 1,
          at: 0,
        } as StoreEvent,
      ],
      0,
    );
    kept.note([b, a], 500);
    expect(kept.recent(900)).toEqual([b, a]);
    expect(kept.recent(1600)).toEqual([]);
  });

  it('keeps the newest at most', () => {
    const kept = new QueuedCalls(60_000, 2);
    const calls = [call(1), call(2), call(3)];
    kept.note(calls, 0);
    expect(kept.recent(0)).toEqual(calls.slice(1));
  });
});
