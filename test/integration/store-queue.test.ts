/**
 * The `store` queue on real Redis and SQLite: a batch of events whose commit fails (here, the
 * database locked by another connection) is retried with backoff until it lands, each retry
 * after a capped full-jitter delay whose ceiling grows with the attempt.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { type Pool, startPool } from '../../jobs/pool.ts';
import { STORE_JOB_ATTEMPTS, storeRetryDelayMs } from '../../src/api/backoff.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { backoffStrategy, STORE_BACKOFF } from '../../src/queue/retry.ts';
import { queueWrite } from '../../src/queue/store-queue.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { capturedLogger } from '../helpers/logger.ts';
import { REDIS_URL, testRedis } from '../helpers/redis.ts';
import { tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../helpers/wait.ts';
import { callEvent, seedRun } from '../unit/store/helpers.ts';

const defer = useCleanup();

/** Failed commits the first test waits for before it releases the database. */
const FAILURES = 4;
/** The stream entry's id is Redis's clock, the delayed timestamp BullMQ's: a few ms apart. */
const CLOCK_SLACK_MS = 25;

/** The largest delay before retry `attempt` of a store job: 1 s, doubling, capped at 60 s. */
const ceilingMs = (attempt: number) => Math.min(60_000, 1000 * 2 ** (attempt - 1));

/**
 * The delay of each retry of a job, in order: from the `delayed` events BullMQ writes to the
 * queue's event stream (the entry's id is when, its `delay` field until when), and 0 for a
 * retry it made at once (a `waiting` event after `active`).
 */
async function retryDelaysMs(redis: Redis, stream: string, jobId: string): Promise<number[]> {
  const entries = await redis.xrange(stream, '-', '+');
  const delays: number[] = [];
  for (const [id, fields] of entries) {
    const event = Object.fromEntries(
      fields.flatMap((value, i) => (i % 2 === 0 ? [[value, fields[i + 1]]] : [])),
    );
    if (event.jobId !== jobId) continue;
    if (event.event === 'delayed') delays.push(Number(event.delay) - Number(id.split('-')[0]));
    // A jitter draw that rounds to 0 ms: BullMQ retries at once, straight back to waiting.
    else if (event.event === 'waiting' && event.prev === 'active') delays.push(0);
  }
  return delays;
}

describe('store queue', () => {
  it('retries a batch whose commit fails, with backoff, until the database takes it', async () => {
    const { prefix, redis: connection } = testRedis(defer);
    const tmp = tempDir('harvest-store-queue');
    defer(() => tmp.remove());
    const dbPath = path.join(tmp.dir, 'harvest.db');
    // A short busy timeout, so a locked database fails the commit at once.
    const store: Store = openStore(dbPath, { busyTimeoutMs: 20 });
    defer(() => store.close());
    const { runId } = seedRun(store, { taskCount: 1 });

    const storeQueue = new Queue(QUEUES.store, { connection, prefix });
    defer(() => storeQueue.close());

    // Another connection holds the write lock for a while.
    const other = new Database(dbPath);
    other.exec('BEGIN IMMEDIATE');
    const { logger, lines } = capturedLogger();
    const pool: Pool = await startPool({
      redisUrl: REDIS_URL,
      prefix,
      roles: ['store'],
      store,
      logger,
    });
    defer(() => pool.close());

    const call = callEvent(runId, 't0', { callId: randomUUID(), creditsUsed: 3 });
    await queueWrite(storeQueue, connection)([call]);
    const [job] = await storeQueue.getJobs(['waiting', 'active', 'delayed', 'failed']);
    expect(job?.opts).toMatchObject({
      attempts: STORE_JOB_ATTEMPTS,
      backoff: { type: STORE_BACKOFF },
    });
    expect(job?.opts.backoff).toEqual({ type: STORE_BACKOFF });

    // Locked through FAILURES attempts (their ceilings add up to 7 s at most).
    const failures = () => lines.filter((l) => l.msg === 'store job failed; it will be retried');
    await waitFor(`${FAILURES} failed attempts of the store job`, () => failures().length, {
      until: (n) => n >= FAILURES,
    });
    other.exec('COMMIT');
    other.close();

    await waitFor('the call committed', () => store.calls.totals(runId).calls > 0, {
      timeoutMs: 15_000,
      intervalMs: 50,
    });
    expect(store.calls.totals(runId)).toMatchObject({ calls: 1, creditsUsed: 3 });
    expect(lines.some((l) => String(l.msg).includes('failed for good'))).toBe(false);
    const failed = failures().length;
    expect(failed).toBeGreaterThanOrEqual(FAILURES);
    expect(failures().map((l) => l.attemptsMade)).toEqual(
      Array.from({ length: failed }, (_, i) => i + 1),
    );

    // Each retry waited a capped full-jitter delay under its attempt's ceiling, and the ceilings
    // grow: what BullMQ did with the job, read from the queue's event stream.
    const delays = await retryDelaysMs(connection, `${prefix}:${QUEUES.store}:events`, job!.id!);
    expect(delays).toHaveLength(failed);
    delays.forEach((delay, i) => {
      expect(delay, `retry ${i + 1}`).toBeGreaterThanOrEqual(0);
      expect(delay, `retry ${i + 1}`).toBeLessThanOrEqual(ceilingMs(i + 1) + CLOCK_SLACK_MS);
    });
  }, 30_000);

  it('store jobs back off with delays whose ceiling doubles per attempt, up to a cap', () => {
    // A jitter draw of 1 gives the ceiling itself.
    const ceilings = Array.from({ length: 10 }, (_, i) => storeRetryDelayMs(i + 1, () => 1));
    expect(ceilings).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000,
    ]);
    // The strategy the store worker hands BullMQ, for the store jobs' backoff type: within the
    // ceiling of the attempt, and (over many draws) growing with it.
    for (let attempt = 1; attempt <= 8; attempt++) {
      const draws = Array.from({ length: 400 }, () =>
        backoffStrategy(attempt, STORE_BACKOFF, new Error('locked')),
      );
      expect(Math.max(...draws)).toBeLessThanOrEqual(ceilingMs(attempt));
      expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
      const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
      expect(mean).toBeGreaterThan(ceilingMs(attempt) * 0.4);
      expect(mean).toBeLessThan(ceilingMs(attempt) * 0.6);
    }
    // Another type does not get the store jobs' growing delays.
    expect(backoffStrategy(5, 'exponential', new Error('locked'))).toBe(1000);
  });
});
