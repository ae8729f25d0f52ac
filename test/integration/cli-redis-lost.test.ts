/**
 * Redis lost in the middle of `run --local`: one line when it goes (its password masked), not a
 * flood of client errors; back with its data, the run goes on to the end; back empty, the
 * command stops (exit 4) saying how to resume. The test runs its own redis-server on a free
 * port, never the shared one.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.ts';
import { runCli, spawnCli } from '../helpers/cli.ts';
import { OwnRedis } from '../helpers/own-redis.ts';
import { deletePrefix, freshPrefix } from '../helpers/redis.ts';
import { testSettings } from '../helpers/settings.ts';
import { tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../helpers/wait.ts';

const PASSWORD = 'lost-and-found-pw';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `text` is in what the process wrote to stderr. */
async function untilSaid(
  what: string,
  stderr: () => string,
  text: string,
  timeoutMs: number,
): Promise<void> {
  await waitFor(`${what} ("${text}" on stderr)`, () => stderr().includes(text), {
    timeoutMs,
    intervalMs: 100,
  });
}

const answered = () => sandbox.ledger().teams.sandbox?.calls['200'] ?? 0;

/** Waits until the run is under way: 10 more calls answered than `before`. */
async function underWay(before: number): Promise<void> {
  await waitFor('the run under way (10 calls answered)', () => answered() - before, {
    until: (n) => n >= 10,
    intervalMs: 50,
  });
}

// Enough work (60 x 150 ms, 2 at a time) that the run outlasts the watch's reconnection backoff
// (up to 2 s) once Redis is back, so the line saying so comes before the run ends. A budget,
// so that calls answered while Redis is away also settle it (after their record).
const TASKS = 60;
const PIPELINE = `name: many
searches:
  - id: q
    query: "topic {n}"
    limit: 1
    matrix:
      n: [${Array.from({ length: TASKS }, (_, i) => i + 1).join(', ')}]
run:
  concurrency: 2
budget:
  maxCredits: 100000
`;

let tmp: ReturnType<typeof tempDir>;
let sandbox: Awaited<ReturnType<typeof startSandbox>>;

beforeAll(async () => {
  tmp = tempDir('cli-redis-lost');
  sandbox = await startSandbox({ port: 0, latency: { minMs: 150, maxMs: 150 } });
});

afterAll(async () => {
  await sandbox.close();
  tmp.remove();
});

async function runThroughLoss(persist: boolean) {
  const dir = path.join(tmp.dir, persist ? 'kept' : 'empty');
  mkdirSync(dir, { recursive: true });
  const redis = await OwnRedis.start({ password: PASSWORD, persist, dir });
  const settings = testSettings({ dir: tmp.dir, prefix: freshPrefix(), apiUrl: sandbox.url });
  const file = path.join(tmp.dir, 'many.yaml');
  writeFileSync(file, PIPELINE);
  const cli = spawnCli(['run', file, '--local'], settings, {
    REDIS_URL: redis.url(),
    HARVEST_DB: path.join(dir, 'harvest.db'),
    LOG_LEVEL: 'warn',
  });
  try {
    const before = answered();
    await untilSaid('the run to start', cli.stderr, 'estimated', 30_000);
    await underWay(before);
    await redis.stop();
    await untilSaid('the loss to be said', cli.stderr, 'is not reachable', 15_000);
    // A fixed duration: the test is about Redis staying away a while (calls answered meanwhile).
    await sleep(3000);
    await redis.start();
    // A deadline: 'hung' if the command does not exit within a minute.
    const code = await Promise.race([cli.exited, sleep(60_000).then(() => 'hung')]);
    return { code, stderr: cli.stderr(), stdout: cli.stdout() };
  } finally {
    cli.child.kill('SIGKILL');
    await redis.stop();
  }
}

function expectNoFlood(stderr: string): void {
  expect(stderr).not.toContain(PASSWORD);
  expect(stderr).toContain('Redis at redis://:***@127.0.0.1:');
  expect(stderr.match(/is not reachable/g)).toHaveLength(1);
  expect(stderr).not.toContain('Unhandled error event');
  expect(stderr).not.toMatch(/\n\s+at /);
  expect(stderr.match(/ECONNREFUSED/g)?.length ?? 0).toBeLessThanOrEqual(1);
}

describe('Redis lost mid-run', () => {
  it('back with its data: one line each way, and the run finishes, no search called twice', async () => {
    const before = sandbox.ledger().teams.sandbox?.calls['200'] ?? 0;
    const r = await runThroughLoss(true);
    expectNoFlood(r.stderr);
    expect(r.stderr).toContain('Redis is back: the run goes on');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/: completed/);
    // Calls answered while Redis was away were recorded and their jobs completed: none of the
    // tasks was searched, and billed, again.
    expect((sandbox.ledger().teams.sandbox?.calls['200'] ?? 0) - before).toBe(TASKS);
  });

  it('back empty: says the jobs are gone and how to resume, exit 4', async () => {
    const r = await runThroughLoss(false);
    expectNoFlood(r.stderr);
    expect(r.stderr).toContain("Redis came back without the run's queued jobs");
    expect(r.stderr).toMatch(/resume with: harvest run --resume \S+ --local/);
    expect(r.code).toBe(4);
  });
});

describe("a run's keys deleted while Redis answers", () => {
  it('run --local says its queued jobs are gone and how to resume (exit 4), and the resume ends the run', async () => {
    // The shared Redis, under a prefix of the test's own: deleting its keys is a FLUSHDB for
    // this run alone.
    const prefix = freshPrefix();
    const settings = testSettings({ dir: tmp.dir, prefix, apiUrl: sandbox.url });
    const file = path.join(tmp.dir, 'deleted.yaml');
    writeFileSync(file, PIPELINE);
    const env = { HARVEST_DB: path.join(tmp.dir, 'deleted.db'), LOG_LEVEL: 'warn' };
    const before = sandbox.ledger().teams.sandbox?.calls['200'] ?? 0;
    const cli = spawnCli(['run', file, '--local'], settings, env);
    try {
      await untilSaid('the run to start', cli.stderr, 'estimated', 30_000);
      await underWay(before);
      expect(await deletePrefix(prefix)).toBeGreaterThan(0);
      // A deadline: 'hung' if the command does not exit within 30 s.
      const code = await Promise.race([cli.exited, sleep(30_000).then(() => 'hung')]);
      expect(code).toBe(4);
      expect(cli.stderr()).toContain(
        "Redis lost the run's queued jobs (its keys were deleted while it answered)",
      );
      const runId = /resume with: harvest run --resume (\S+) --local/.exec(cli.stderr())?.[1];
      expect(runId).toBeDefined();
      const resumed = await runCli(['run', '--resume', runId as string, '--local'], settings, env);
      expect(resumed.code).toBe(0);
      expect(resumed.stdout).toMatch(/: completed/);
      // No task was searched twice: every one billed once.
      expect((sandbox.ledger().teams.sandbox?.calls['200'] ?? 0) - before).toBe(TASKS);
    } finally {
      cli.child.kill('SIGKILL');
      await deletePrefix(prefix);
    }
  }, 90_000);
});

describe('Redis lost under a worker', () => {
  it('logs one line when it goes and one when it is back empty, then stops cleanly', async () => {
    const dir = path.join(tmp.dir, 'worker');
    mkdirSync(dir, { recursive: true });
    const redis = await OwnRedis.start({ password: PASSWORD, dir });
    const settings = testSettings({ dir, prefix: freshPrefix(), apiUrl: sandbox.url });
    const worker = spawnCli(['worker'], settings, {
      REDIS_URL: redis.url(),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    });
    try {
      await untilSaid('the worker to start', worker.stderr, 'worker started', 30_000);
      await redis.stop();
      await untilSaid('the loss to be said', worker.stderr, 'is not reachable', 15_000);
      // A fixed duration: the test is about Redis staying away a while (said once, not again).
      await sleep(2000);
      await redis.start();
      await untilSaid('the return to be said', worker.stderr, 'came back without its data', 15_000);
      worker.child.kill('SIGINT');
      expect(await worker.exited).toBe(0);
      const lines = worker.stderr().trim().split('\n');
      expect(lines.every((line) => line.startsWith('{'))).toBe(true);
      expect(lines.filter((line) => line.includes('not reachable'))).toHaveLength(1);
      expect(worker.stderr()).not.toContain(PASSWORD);
      expect(worker.stderr().match(/ECONNREFUSED/g)?.length ?? 0).toBeLessThanOrEqual(1);
    } finally {
      worker.child.kill('SIGKILL');
      await redis.stop();
    }
  });

  it('a stop asked while Redis is away says it waits for Redis, and a second signal ends it', async () => {
    const dir = path.join(tmp.dir, 'worker-stop');
    mkdirSync(dir, { recursive: true });
    const redis = await OwnRedis.start({ password: PASSWORD, dir });
    const settings = testSettings({ dir, prefix: freshPrefix(), apiUrl: sandbox.url });
    const worker = spawnCli(['worker', '--roles', 'search'], settings, {
      REDIS_URL: redis.url(),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    });
    try {
      await untilSaid('the worker to start', worker.stderr, 'worker started', 30_000);
      await redis.stop();
      await untilSaid('the loss to be said', worker.stderr, 'is not reachable', 15_000);
      worker.child.kill('SIGTERM');
      // The graceful stop waits for Redis; it says so instead of seeming to hang.
      await untilSaid('the wait to be said', worker.stderr, 'still stopping', 15_000);
      expect(worker.child.exitCode).toBeNull();
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(4);
    } finally {
      worker.child.kill('SIGKILL');
      await redis.stop();
    }
  });
});
