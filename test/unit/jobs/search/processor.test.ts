/**
 * The search processor's branches, through its seams (SearchDeps) on real parts: Redis under a
 * fresh prefix (budget, journal, rate controller, stopped runs, lost-call counts), a temp SQLite
 * store that takes the records, the sandbox on port 0 as the API, and real BullMQ jobs. A job
 * "back from a dead worker" is really one: taken by a worker that never renews its lock, then
 * moved back by another worker's stall check and run by it.
 */
import { randomUUID } from 'node:crypto';
import {
  DelayedError,
  type Job,
  Queue,
  RateLimitError,
  UnrecoverableError,
  Worker,
  type WorkerOptions,
} from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { lostCallsOf } from '../../../../jobs/lost-calls.ts';
import { createSearchProcessor, type SearchDeps } from '../../../../jobs/search/processor.ts';
import { pauseSearchQueue } from '../../../../jobs/search/role.ts';
import { createApiClient } from '../../../../src/api/index.ts';
import type { StoreEvent } from '../../../../src/events/store.ts';
import { Budget } from '../../../../src/queue/budget.ts';
import { createRedis } from '../../../../src/queue/connection.ts';
import { DONE_FIELD, InflightJournal } from '../../../../src/queue/inflight.ts';
import { type HarvestKeys, harvestKeys, QUEUES, searchJobId } from '../../../../src/queue/names.ts';
import { RateController } from '../../../../src/queue/rate/controller.ts';
import { StoppedRuns } from '../../../../src/queue/stopped-runs.ts';
import { startSandbox } from '../../../../src/sandbox/index.ts';
import { directWriter, type Store } from '../../../../src/store/index.ts';
import { useCleanup } from '../../../helpers/cleanup.ts';
import { capturedLogger } from '../../../helpers/logger.ts';
import { REDIS_URL, testRedis } from '../../../helpers/redis.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { seedRun, useTempStores } from '../../store/helpers.ts';

const defer = useCleanup();
const stores = useTempStores();

interface Setup {
  deps: SearchDeps;
  process: ReturnType<typeof createSearchProcessor>;
  store: Store;
  runId: string;
  queue: Queue;
  redis: Redis;
  keys: HarvestKeys;
  /** The processor's list of stopped runs (a pool refreshes it now and then). */
  stoppedRuns: StoppedRuns;
  /** Every event the processor recorded (they are in SQLite too). */
  recorded: StoreEvent[];
  /** Answers the sandbox gave. */
  apiCalls(): number;
  /** Adds the job of task `taskKey` (or `data` as it stands) and takes it as a worker would. */
  takeJob(taskKey: string, data?: unknown): Promise<{ job: Job; token: string }>;
  /**
   * Adds the job of task `taskKey`, lets a worker die holding it (`whileHeld` runs then), and
   * waits for the job's end in the worker that takes it back.
   */
  runAfterStall(taskKey: string, whileHeld?: (job: Job) => Promise<unknown>): Promise<Job>;
}

async function setup(options: { maxCredits?: number; apiKey?: string } = {}): Promise<Setup> {
  const { prefix, redis } = testRedis(defer);
  const keys = harvestKeys(prefix);
  const connection = createRedis(REDIS_URL, 'worker');
  defer(() => connection.quit());
  const queue = new Queue(QUEUES.search, { connection, prefix });
  defer(() => queue.close());
  const sandbox = await startSandbox({ port: 0 });
  defer(() => sandbox.close());
  const client = createApiClient({ baseUrl: sandbox.url, apiKey: options.apiKey ?? 'fc-sandbox' });
  defer(() => client.close());
  const store = stores.open();
  const { runId } = seedRun(store, {
    taskCount: 2,
    ...(options.maxCredits === undefined ? {} : { maxCredits: options.maxCredits }),
  });
  const recorded: StoreEvent[] = [];
  const writer = directWriter(store);
  const { logger } = capturedLogger();
  const stoppedRuns = new StoppedRuns(redis, keys.stoppedRuns);
  const deps: SearchDeps = {
    client,
    async record(events) {
      recorded.push(...events);
      expect(await writer.write(events)).toEqual([]);
    },
    budget: new Budget(redis, keys),
    inflight: new InflightJournal(redis, keys),
    keys,
    rate: new RateController(redis, keys, logger),
    pause: (code, reason) => pauseSearchQueue(queue, redis, keys, code, reason),
    lostCalls: (jobId) => lostCallsOf(redis, keys, jobId),
    taskDone: (id, key) => store.tasks.get(id, key)?.status === 'done',
    maxLostCalls: 3,
    stopReason: (id) => stoppedRuns.confirmedReason(id),
    workerId: 'worker-under-test',
    logger,
    random: () => 0,
  };
  const process = createSearchProcessor(deps);
  return {
    deps,
    process,
    store,
    runId,
    queue,
    redis,
    keys,
    stoppedRuns,
    recorded,
    apiCalls() {
      const { teams, unauthenticated } = sandbox.ledger();
      const answers = [
        ...Object.values(teams.sandbox?.calls ?? {}),
        ...Object.values(unauthenticated),
      ];
      return answers.reduce((a, b) => a + b, 0);
    },
    ...searchJobs({ connection, prefix, queue, runId, process, maxCredits: options.maxCredits }),
  };
}

/** Jobs of the run's tasks, taken by hand or run after a stall (see `Setup`). */
function searchJobs(input: {
  connection: Redis;
  prefix: string;
  queue: Queue;
  runId: string;
  process: Setup['process'];
  maxCredits: number | undefined;
}): Pick<Setup, 'takeJob' | 'runAfterStall'> {
  const { connection, prefix, queue, runId } = input;
  const jobData = (taskKey: string) => ({
    runId,
    taskKey,
    request: { query: `q ${taskKey}`, limit: 2 },
    maxAttempts: 3,
    estimateMaxCredits: 5,
    ...(input.maxCredits === undefined ? {} : { maxCredits: input.maxCredits }),
  });
  const worker = (extra: Partial<WorkerOptions> = {}) => {
    const w = new Worker(QUEUES.search, null, { connection, prefix, autorun: false, ...extra });
    defer(() => w.close(true));
    return w;
  };
  return {
    async takeJob(taskKey, data = jobData(taskKey)) {
      await queue.add('search', data, { jobId: searchJobId(runId, taskKey), attempts: 3 });
      const token = randomUUID();
      const job = await worker().getNextJob(token);
      if (!job) throw new Error('no job to take');
      return { job, token };
    },
    async runAfterStall(taskKey, whileHeld) {
      const id = searchJobId(runId, taskKey);
      await queue.add('search', jobData(taskKey), { jobId: id, attempts: 3 });
      // Takes the job and never renews its lock: the worker that died during the job.
      const taken = await worker({ lockDuration: 300 }).getNextJob(randomUUID());
      if (taken?.id !== id) throw new Error(`took ${taken?.id}, not ${id}`);
      await whileHeld?.(taken);
      // Another worker's stall check moves it back to wait, and that worker runs it.
      const w = new Worker(QUEUES.search, input.process, {
        connection,
        prefix,
        stalledInterval: 100,
        maxStalledCount: 100,
      });
      defer(() => w.close());
      return waitFor(
        `job ${id} back from a dead worker to end`,
        async () => {
          // The state first, then the job: read the other way round, a job that ends between
          // the two reads would come without its return value.
          const state = await queue.getJobState(id);
          return state === 'completed' || state === 'failed' ? queue.getJob(id) : undefined;
        },
        { timeoutMs: 10_000 },
      ) as Promise<Job>;
    },
  };
}

describe('search processor', () => {
  it('records an answered call, its results and its task done, and settles its budget', async () => {
    const s = await setup({ maxCredits: 100 });
    const { job, token } = await s.takeJob('t0');
    const { creditsUsed } = await s.process(job, token);
    expect(creditsUsed).toBeGreaterThan(0);
    expect(s.recorded.map((e) => e.type)).toEqual(['call', 'results', 'task']);
    expect(s.store.tasks.get(s.runId, 't0')?.status).toBe('done');
    expect(s.store.calls.totals(s.runId)).toMatchObject({ calls: 1, creditsUsed });
    // The reservation became what the call cost, the call left the journal, its job is marked.
    expect(await s.deps.budget.settled(s.runId, s.deps.keys.inflight)).toBe(creditsUsed);
    expect(await s.deps.inflight.pending()).toBe(0);
    expect(await s.deps.inflight.recordedDone(`${job.queueQualifiedName}:${job.id}`)).toBe(true);
    expect(s.apiCalls()).toBe(1);
  });

  it('pauses the queue on a 401, the task queued with the reason, the call recorded', async () => {
    const s = await setup({ apiKey: 'not-a-key' });
    const { job, token } = await s.takeJob('t0');
    await expect(s.process(job, token)).rejects.toBeInstanceOf(RateLimitError);
    expect(await s.queue.isPaused()).toBe(true);
    expect(s.store.calls.totals(s.runId).calls).toBe(1);
    expect(s.store.tasks.get(s.runId, 't0')).toMatchObject({ status: 'queued' });
    expect(await s.deps.inflight.pending()).toBe(0);
  });

  describe('over budget', () => {
    it('waits, attempt unspent, while only reservations of calls in flight stand in the way', async () => {
      const s = await setup({ maxCredits: 10 });
      // Another task's call in flight holds 8 credits: 8 + 5 would pass 10, but it may settle lower.
      await s.deps.budget.reserve(s.runId, 'call-in-flight', 8, 10);
      await s.deps.inflight.begin({
        callId: 'call-in-flight',
        runId: s.runId,
        taskKey: 't1',
        attempt: 1,
        startedAt: Date.now(),
        workerId: 'another-worker',
      });
      const { job, token } = await s.takeJob('t0');
      await expect(s.process(job, token)).rejects.toBeInstanceOf(DelayedError);
      expect(await job.getState()).toBe('delayed');
      expect(job.attemptsMade).toBe(0);
      expect(s.store.tasks.get(s.runId, 't0')?.status).toBe('queued');
      expect(s.recorded).toEqual([]);
      expect(s.apiCalls()).toBe(0);
    });

    it('fails BUDGET_EXCEEDED when what the run spent leaves no room', async () => {
      const s = await setup({ maxCredits: 10 });
      await s.deps.budget.raiseTo(s.runId, 8);
      const { job, token } = await s.takeJob('t0');
      const error = await s.process(job, token).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnrecoverableError);
      expect(String(error)).toContain('budget of 10 credits would be exceeded');
      expect(s.store.tasks.get(s.runId, 't0')).toMatchObject({
        status: 'failed',
        lastErrorCode: 'BUDGET_EXCEEDED',
      });
      expect(s.store.calls.totals(s.runId).calls).toBe(0);
      expect(s.apiCalls()).toBe(0);
      expect(await s.deps.inflight.pending()).toBe(0);
    });
  });

  it('drops the job of a stopped run, recording nothing and calling nothing', async () => {
    const s = await setup();
    // As `harvest run --stop` does; the pool's list learns it on its next read.
    await new StoppedRuns(s.redis, s.keys.stoppedRuns).stop(s.runId, 'cancelled');
    await s.stoppedRuns.refresh();
    const { job, token } = await s.takeJob('t0');
    const error = await s.process(job, token).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(String(error)).toContain('was cancelled; the job is dropped');
    expect(s.recorded).toEqual([]);
    expect(s.store.tasks.get(s.runId, 't0')?.status).toBe('queued');
    expect(s.apiCalls()).toBe(0);
  });

  it('re-queues the task of a job whose data was lost, with JOB_DATA_LOST', async () => {
    const s = await setup();
    s.store.applyEvents([
      { type: 'task', runId: s.runId, taskKey: 't0', status: 'running', attempts: 1, at: 1 },
    ]);
    const { job, token } = await s.takeJob('t0', { runId: s.runId });
    const error = await s.process(job, token).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(String(error)).toContain(`harvest run --resume ${s.runId}`);
    expect(s.store.tasks.get(s.runId, 't0')).toMatchObject({
      status: 'queued',
      lastErrorCode: 'JOB_DATA_LOST',
    });
    expect(s.apiCalls()).toBe(0);
  });

  describe('a job back from a dead worker', () => {
    it('ends without calling when its task is done in the database', async () => {
      const s = await setup();
      s.store.applyEvents([
        { type: 'task', runId: s.runId, taskKey: 't0', status: 'done', attempts: 1, at: 1 },
      ]);
      const job = await s.runAfterStall('t0');
      expect(job.stalledCounter).toBeGreaterThan(0);
      expect(await job.getState()).toBe('completed');
      expect(job.returnvalue).toEqual({ creditsUsed: 0 });
      expect(s.apiCalls()).toBe(0);
      expect(s.recorded).toEqual([]);
    });

    it('ends without calling when its job is marked done in Redis', async () => {
      const s = await setup();
      // This pool has no database to ask: the job's own mark says its success was recorded
      // (the mark a worker's journal end leaves, before it died).
      delete s.deps.taskDone;
      const job = await s.runAfterStall('t0', (held) =>
        s.redis.hset(`${held.queueQualifiedName}:${held.id}`, DONE_FIELD, '1'),
      );
      expect(await job.getState()).toBe('completed');
      expect(job.returnvalue).toEqual({ creditsUsed: 0 });
      expect(s.apiCalls()).toBe(0);
    });

    it('fails WORKER_CRASHED once maxLostCalls of its calls were lost with workers', async () => {
      const s = await setup();
      // What the reaper counts of the task's calls lost with dead workers.
      await s.redis.hincrby(s.keys.crashes, searchJobId(s.runId, 't0'), 3);
      const job = await s.runAfterStall('t0');
      expect(await job.getState()).toBe('failed');
      expect(job.failedReason).toContain('3 calls of this task were lost');
      expect(s.store.tasks.get(s.runId, 't0')).toMatchObject({
        status: 'failed',
        lastErrorCode: 'WORKER_CRASHED',
      });
      expect(s.apiCalls()).toBe(0);
    });

    it('calls again while fewer than maxLostCalls of its calls were lost', async () => {
      const s = await setup();
      await s.redis.hincrby(s.keys.crashes, searchJobId(s.runId, 't0'), 2);
      const job = await s.runAfterStall('t0');
      expect(await job.getState()).toBe('completed');
      expect(s.store.tasks.get(s.runId, 't0')?.status).toBe('done');
      expect(s.apiCalls()).toBe(1);
    });
  });
});
