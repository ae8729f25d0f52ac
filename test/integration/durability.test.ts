/**
 * Paid-for data is never dropped: a locked database, store jobs that fail for good, an API
 * that cannot be reached, an answer too large to read, and a task that keeps killing its
 * workers each end with every call recorded once and nothing called twice for nothing.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import { type Pool, startPool } from '../../jobs/pool.ts';
import { createApiClient } from '../../src/api/index.ts';
import { loadSettings } from '../../src/config.ts';
import { InflightJournal } from '../../src/queue/inflight.ts';
import { QUEUES, searchJobId } from '../../src/queue/names.ts';
import { queueWrite, waitingRecords } from '../../src/queue/store-queue.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { openStore } from '../../src/store/index.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { type CliProcess, spawnCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { capturedLogger } from '../helpers/logger.ts';
import { waitForDrained } from '../helpers/queues.ts';
import { REDIS_URL, testRedis } from '../helpers/redis.ts';
import { tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../helpers/wait.ts';
import { callEvent, seedRun } from '../unit/store/helpers.ts';

const defer = useCleanup();
let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function matrix(name: string, n: number, extra = ''): string {
  const values = Array.from({ length: n }, (_, i) => i).join(', ');
  return `name: ${name}\n${extra}searches:\n  - matrix:\n      n: [${values}]\n    query: "${name} {n}"\n    limit: 2\n`;
}

function ledger(harness: Harness): { answers: number; ok: number; credits: number } {
  const team = harness.sandbox.ledger().teams.sandbox;
  return {
    answers: Object.values(team?.calls ?? {}).reduce((a, b) => a + b, 0),
    ok: team?.calls['200'] ?? 0,
    credits: team?.creditsCharged ?? 0,
  };
}

describe('durability', () => {
  it('a database locked mid-run loses and repeats nothing: every call recorded once, the ledger matches', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 20, maxMs: 60 } } });
    const file = h.writePipeline('locked', matrix('it-locked', 80));
    await h.startPool({ concurrency: 8 });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitFor('10 tasks done', () => h!.runtime.store.tasks.counts(runId).done >= 10);

    // Another connection holds the write lock for longer than the writer's busy timeout.
    const other = new Database(h.settings.dbPath);
    other.exec('BEGIN IMMEDIATE');
    // A fixed duration: the test is about a lock held longer than the writer's busy timeout.
    await sleep(7000);
    other.exec('COMMIT');
    other.close();

    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final.status).toBe('completed');
    await waitForDrained(h!.runtime.storeQueue);
    const summary = h.runtime.store.calls.summary(runId);
    const billed = ledger(h);
    // Each task was called once: no call was repeated because its record could not be written.
    expect(billed.ok).toBe(80);
    expect(summary).toMatchObject({ calls: billed.answers, creditsUsed: billed.credits });
    expect(h.runtime.store.tasks.counts(runId).done).toBe(80);
    expect(h.logs()).toContain('the events wait in the store queue');
  }, 90_000);

  it('a store job that failed for good is kept, shown as waiting, and re-driven when a store worker starts', async () => {
    const { prefix, redis: connection } = testRedis(defer);
    const tmp = tempDir('harvest-kept');
    defer(() => tmp.remove());
    const dbPath = path.join(tmp.dir, 'harvest.db');
    const store = openStore(dbPath, { busyTimeoutMs: 20 });
    defer(() => store.close());
    const { runId } = seedRun(store, { taskCount: 1 });
    const storeQueue = new Queue(QUEUES.store, { connection, prefix });
    defer(() => storeQueue.close());
    const { logger } = capturedLogger();

    // The database is locked for good while a store job with one attempt is tried.
    const other = new Database(dbPath);
    other.exec('BEGIN IMMEDIATE');
    const call = callEvent(runId, 't0', { callId: randomUUID(), creditsUsed: 5 });
    const job = await queueWrite(storeQueue, connection)([call]);
    expect(job.opts.removeOnFail).toBe(false);
    // The same job with its last attempt only, so it fails for good at once.
    await storeQueue.remove(job.id!);
    await storeQueue.add('events', job.data, { ...job.opts, attempts: 1 });
    const first: Pool = await startPool({
      redisUrl: REDIS_URL,
      prefix,
      roles: ['store'],
      store,
      logger,
    });
    await waitFor('the store job failed for good', () => storeQueue.getFailedCount(), {
      until: (n) => n > 0,
    });
    await first.close();
    expect(await waitingRecords(storeQueue)).toMatchObject({ jobs: 1, events: 1, failedJobs: 1 });

    other.exec('COMMIT');
    other.close();
    const second = await startPool({
      redisUrl: REDIS_URL,
      prefix,
      roles: ['store'],
      store,
      logger,
    });
    defer(() => second.close());
    await waitFor('the call committed', () => store.calls.totals(runId).calls > 0, {
      timeoutMs: 5000,
      intervalMs: 25,
    });
    expect(store.calls.totals(runId)).toMatchObject({ calls: 1, creditsUsed: 5 });
    // The job completes just after its commit.
    await waitFor('the store job to complete', () => waitingRecords(storeQueue), {
      until: (waiting) => waiting.jobs === 0,
      timeoutMs: 5000,
      intervalMs: 25,
    });
    expect(await waitingRecords(storeQueue)).toMatchObject({ jobs: 0, failedJobs: 0 });
  }, 30_000);

  it('an API that cannot be reached costs nothing: the run waits for it, no task failed, none over budget', async () => {
    h = await startHarness();
    // A port nothing listens on.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const settings = { ...h.settings, apiUrl: `http://127.0.0.1:${port}` };
    const file = h.writePipeline(
      'unreachable',
      matrix('it-unreachable', 6, 'budget:\n  maxCredits: 8\nrun:\n  maxAttempts: 2\n'),
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const pool = await startLocalPool(settings, {
      roles: ['search', 'store'],
      concurrency: 2,
      store: h.runtime.store,
      logger: h.logger,
    });
    defer(() => pool.close());
    // The search queue pauses for the outage (src/queue/circuit.ts): no attempt is spent.
    const stopped = new AbortController();
    const waiting = await waitForRun(h.runtime, runId, {
      pollMs: 100,
      signal: stopped.signal,
      onProgress: (p) => {
        if (p.apiOutage && p.calls > 0) stopped.abort();
      },
    });
    expect(waiting.apiOutage?.lastError).toContain('connection refused');
    expect(waiting).toMatchObject({ status: 'running', failed: 0 });
    expect(h.runtime.store.calls.summary(runId)).toMatchObject({
      creditsUsed: 0,
      unknownCostCalls: 0,
    });
  }, 60_000);

  it('an answer larger than the cap fails its task once, unread, and the worker goes on', async () => {
    h = await startHarness();
    const huge = `{"success":true,"data":{"web":[{"url":"https://a.example","markdown":"${'x'.repeat(2 * 1024 * 1024)}"}]},"creditsUsed":1,"id":"x"}`;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(huge));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    defer(() => new Promise((r) => server.close(r)));
    const settings = loadSettings({
      HARVEST_API_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      HARVEST_API_KEY: 'fc-sandbox',
      HARVEST_DB: h.settings.dbPath,
      HARVEST_PREFIX: h.settings.queuePrefix,
      HARVEST_MAX_RESPONSE_BYTES: String(1024 * 1024),
    });
    const file = h.writePipeline('huge', matrix('it-huge', 4));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const pool = await startLocalPool(settings, {
      roles: ['search', 'store'],
      concurrency: 2,
      store: h.runtime.store,
      logger: h.logger,
    });
    defer(() => pool.close());
    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final).toMatchObject({ status: 'failed', failed: 4 });
    expect(h.runtime.store.tasks.failedByCode(runId)).toEqual({ RESPONSE_TOO_LARGE: 4 });
    // Not retried: one call per task, its cost unknown (the service billed an unread answer).
    expect(h.runtime.store.calls.summary(runId)).toMatchObject({ calls: 4, unknownCostCalls: 4 });
  }, 60_000);

  it('a task whose calls keep dying with their workers fails as WORKER_CRASHED instead of being called again', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 20_000, maxMs: 20_000 } } });
    const file = h.writePipeline('crashloop', matrix('it-crashloop', 1));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const client = createApiClient({ baseUrl: h.settings.apiUrl, apiKey: 'fc-sandbox' });
    // The database's pool: reaps calls of dead workers quickly.
    const storePool = await startPool({
      redisUrl: REDIS_URL,
      prefix: h.settings.queuePrefix,
      roles: ['store'],
      client,
      store: h.runtime.store,
      logger: h.logger,
      reapIntervalMs: 200,
    });
    defer(() => storePool.close());
    const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
    const children: CliProcess[] = [];
    defer(() => {
      for (const c of children) c.child.kill('SIGKILL');
    });
    const args = [
      'worker',
      '--roles',
      'search',
      '-c',
      '1',
      '--lock-duration',
      '1000',
      '--stalled-interval',
      '500',
    ];
    const jobId = searchJobId(runId, [...h.runtime.store.tasks.unfinished(runId)][0]!.key);
    const { redis, keys } = h.runtime;
    const crashes = async () => Number(await redis.hget(keys.crashes, jobId));
    for (let kill = 0; kill < 3; kill++) {
      const worker = spawnCli(args, h.settings);
      children.push(worker);
      await waitFor('a call journaled by the worker', () => journal.pending(), {
        until: (n) => n > 0,
        timeoutMs: 30_000,
      });
      worker.child.kill('SIGKILL');
      await worker.exited;
      // Reaped as LOST once its heartbeat lapses, then counted as a crash of its job (the count
      // follows the journal's removal, so it is awaited on its own).
      await waitFor('the lost call reaped', () => journal.pending(), { until: (n) => n === 0 });
      await waitFor(`crash ${kill + 1} of the job counted`, crashes, {
        until: (n) => n >= kill + 1,
        timeoutMs: 5000,
      });
      expect(await crashes()).toBe(kill + 1);
    }
    children.push(spawnCli(args, h.settings));
    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final).toMatchObject({ status: 'failed', failed: 1 });
    expect(h.runtime.store.tasks.failedByCode(runId)).toEqual({ WORKER_CRASHED: 1 });
    expect(h.runtime.store.calls.summary(runId)).toMatchObject({
      calls: 3,
      byOutcome: { LOST: 3 },
    });
  }, 90_000);
});
