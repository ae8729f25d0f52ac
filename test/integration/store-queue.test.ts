/**
 * The `store` queue on real Redis and SQLite: a batch of events whose commit fails (here, the
 * database locked by another connection) is retried with backoff until it lands.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { STORE_JOB_ATTEMPTS } from '../../src/queue/backoff.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { queueWrite } from '../../src/queue/store-sink.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { type Pool, startPool } from '../../src/worker/pool.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { capturedLogger } from '../helpers/logger.ts';
import { REDIS_URL, testRedis } from '../helpers/redis.ts';
import { tempDir } from '../helpers/tmp.ts';
import { callEvent, seedRun } from '../unit/store/helpers.ts';

const defer = useCleanup();

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
    await queueWrite(storeQueue)([call]);
    const [job] = await storeQueue.getJobs(['waiting', 'active', 'delayed', 'failed']);
    expect(job?.opts).toMatchObject({
      attempts: STORE_JOB_ATTEMPTS,
      backoff: { type: expect.any(String) },
    });

    while (!lines.some((l) => l.msg === 'store job failed; it will be retried')) await sleep(20);
    await sleep(1500);
    other.exec('COMMIT');
    other.close();

    for (let i = 0; i < 300 && store.calls.totals(runId).calls === 0; i++) await sleep(50);
    expect(store.calls.totals(runId)).toMatchObject({ calls: 1, creditsUsed: 3 });
    expect(lines.some((l) => String(l.msg).includes('failed for good'))).toBe(false);
  }, 30_000);
});
