/**
 * A stop while `harvest run` writes the plan of a large pipeline (200,000 searches): planning
 * ends there, the run is left `interrupted` with nothing in Redis for a worker to take, the
 * command says so and exits 4, and `run --resume` writes the rest of the plan, as a scheduled
 * tick delivered again does for a run whose planner died. Real Redis, a temp database, the real
 * binary; no API is called (nothing runs without `--local`).
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Settings } from '../../src/config.ts';
import { createRedis } from '../../src/queue/connection.ts';
import { harvestKeys, QUEUES } from '../../src/queue/names.ts';
import { FeedState } from '../../src/run/feed/state.ts';
import { requeueUnfinished } from '../../src/run/resume.ts';
import { loadValidPipeline, startRun } from '../../src/run/start.ts';
import { openStore, type RunRow } from '../../src/store/index.ts';
import { type CliProcess, runCli, spawnCli } from '../helpers/cli.ts';
import { startHarness } from '../helpers/harness.ts';
import { unfinishedJobs } from '../helpers/queues.ts';
import { deletePrefix, freshPrefix } from '../helpers/redis.ts';
import { testSettings } from '../helpers/settings.ts';
import { tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../helpers/wait.ts';

const TOPICS = 500;
const PLACES = 400;
const SEARCHES = TOPICS * PLACES;

const tmp = tempDir('run-interrupt-planning');
const redis = createRedis('redis://127.0.0.1:6379', 'client');
const prefixes: string[] = [];
const children = new Set<CliProcess>();
let file: string;

beforeAll(() => {
  const list = (n: number, name: string) => Array.from({ length: n }, (_, i) => `${name}${i}`);
  file = path.join(tmp.dir, 'large.yaml');
  writeFileSync(
    file,
    `name: large\nsearches:\n  - query: "{topic} in {place}"\n    matrix:\n` +
      `      topic: [${list(TOPICS, 't').join(', ')}]\n      place: [${list(PLACES, 'p').join(', ')}]\n`,
  );
});

afterEach(() => {
  for (const c of children) c.child.kill('SIGKILL');
  children.clear();
});

afterAll(async () => {
  for (const prefix of prefixes) await deletePrefix(prefix);
  await redis.quit();
  tmp.remove();
});

/** Settings of one test: its own database and Redis prefix. No API is called. */
function freshSettings(name: string): Settings {
  const prefix = freshPrefix();
  prefixes.push(prefix);
  return testSettings({ dir: path.join(tmp.dir, name), prefix, apiUrl: 'http://127.0.0.1:9' });
}

/** Reads the database as `status` does (it may not exist yet, or not be migrated yet). */
function readStore<T>(settings: Settings, read: (store: ReturnType<typeof openStore>) => T): T {
  const store = openStore(settings.dbPath, { readonly: true });
  try {
    return read(store);
  } finally {
    store.close();
  }
}

/** The run `harvest run` created, once its row is in the database (its plan being written). */
function runCreated(settings: Settings): Promise<RunRow> {
  return waitFor(
    'the run row, written before its plan',
    () => (existsSync(settings.dbPath) ? readStore(settings, (s) => s.runs.latest()) : undefined),
    { timeoutMs: 45_000, intervalMs: 10 },
  );
}

/** What Redis holds of the run: search jobs not ended, and its feed entry. */
async function inRedis(settings: Settings, runId: string) {
  const search = new Queue(QUEUES.search, { connection: redis, prefix: settings.queuePrefix });
  try {
    const feed = await new FeedState(redis, harvestKeys(settings.queuePrefix)).get(runId);
    return { jobs: await unfinishedJobs(search), fed: feed !== undefined };
  } finally {
    await search.close();
  }
}

function start(settings: Settings, args: string[] = []): CliProcess {
  const p = spawnCli(['run', file, ...args], settings);
  children.add(p);
  return p;
}

describe('a plan left unfinished', () => {
  it('a run whose planner died is planned to its end before its jobs are enqueued again', async () => {
    const h = await startHarness();
    try {
      const loaded = await loadValidPipeline(file);
      // A planner that stops once a batch is written, and leaves the run as a dead one would.
      const stop = new AbortController();
      let runId: string | undefined;
      const timer = setInterval(() => {
        if (runId && h.runtime.store.tasks.counts(runId).total > 0) stop.abort();
      }, 5);
      const started = await startRun(h.runtime, loaded, {
        logger: h.logger,
        onPlanning: (id) => {
          runId = id;
        },
        signal: stop.signal,
      }).finally(() => clearInterval(timer));
      expect(started.interrupted).toBe(true);
      expect(started.taskCount).toBeGreaterThan(0);
      expect(started.taskCount).toBeLessThan(SEARCHES);
      h.runtime.store.runs.setStatus(started.runId, 'queued');

      // What a scheduled tick delivered again does with the run it had recorded.
      await requeueUnfinished(h.runtime, started.runId, loaded.pipeline);
      const run = h.runtime.store.runs.get(started.runId);
      expect(run?.taskCount).toBe(SEARCHES);
      expect(h.runtime.store.tasks.counts(started.runId).total).toBe(SEARCHES);
      expect(run?.status).toBe('running');
    } finally {
      await h.stop();
    }
  }, 150_000);
});

describe('a stop while the plan is written', () => {
  it('Ctrl-C ends planning: the run is interrupted, nothing is queued, exit 4; --resume writes the rest', async () => {
    const settings = freshSettings('once');
    const p = start(settings);
    const run = await runCreated(settings);
    p.child.kill('SIGINT');
    const code = await p.exited;

    expect(p.stdout()).not.toContain(run.id);
    expect(p.stderr()).not.toContain('enqueued; start workers');
    expect(p.stderr()).toContain(`run ${run.id} stopped while planning: it is interrupted`);
    expect(p.stderr()).toContain(`harvest run --resume ${run.id}`);
    expect(code).toBe(4);
    const after = readStore(settings, (s) => ({
      run: s.runs.get(run.id),
      tasks: s.tasks.counts(run.id).total,
    }));
    expect(after.run?.status).toBe('interrupted');
    // Stopped before its end: its count (set once every task is a row) is not set.
    expect(after.tasks).toBeLessThan(SEARCHES);
    expect(after.run?.taskCount).toBe(0);
    expect(await inRedis(settings, run.id)).toEqual({ jobs: 0, fed: false });

    // The rest of the plan is written, then the run goes as any other (a window of jobs).
    const resumed = await runCli(['run', '--resume', run.id], settings, {
      HARVEST_QUEUE_WINDOW: '100',
    });
    expect(resumed.stderr).toContain('enqueued; start workers');
    expect(resumed.code).toBe(0);
    const planned = readStore(settings, (s) => ({
      run: s.runs.get(run.id),
      tasks: s.tasks.counts(run.id).total,
    }));
    expect(planned.tasks).toBe(SEARCHES);
    expect(planned.run?.taskCount).toBe(SEARCHES);
    expect(planned.run?.status).toBe('running');
    expect(await inRedis(settings, run.id)).toEqual({ jobs: 100, fed: true });
  }, 150_000);

  it('SIGINT then SIGTERM stops at once, leaving the run interrupted and nothing queued', async () => {
    const settings = freshSettings('twice');
    const p = start(settings, ['--json']);
    const run = await runCreated(settings);
    p.child.kill('SIGINT');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(4);
    const answer = JSON.parse(p.stdout()) as { ok: boolean; error: { runId?: string } };
    expect(answer.ok).toBe(false);
    expect(answer.error.runId).toBe(run.id);
    expect(readStore(settings, (s) => s.runs.get(run.id)?.status)).toBe('interrupted');
    expect(await inRedis(settings, run.id)).toEqual({ jobs: 0, fed: false });
  }, 90_000);
});
