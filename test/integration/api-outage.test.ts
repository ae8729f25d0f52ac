/**
 * The API going away mid-run: the sandbox is stopped for longer than a task's attempts would
 * last, then started again on the same port. The run pauses instead of failing, probes the API,
 * and finishes once it answers again, with no attempt spent on the outage. An API address that
 * never answered ends `run --local` at once with exit 3.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { readCircuit } from '../../src/queue/circuit.ts';
import { startRun } from '../../src/run/start.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli, spawnCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { freePort } from '../helpers/ports.ts';
import { waitFor } from '../helpers/wait.ts';

const SEARCHES = 200;
/** A minute: four times the spread of a task's five attempts (about 14 s of backoff). */
const OUTAGE_MS = 60_000;
/**
 * On an address of its own in 127/8: while the sandbox is stopped, its port is free, and a
 * sandbox another test starts on port 0 (on 127.0.0.1) cannot take it over.
 */
const SANDBOX = { host: '127.0.0.3', latency: { minMs: 50, maxMs: 150 } };
/** Probes at most this far apart, so the run goes on soon after the API is back. */
const PROBE_ENV = { HARVEST_API_PROBE_MAX_MS: '1000' };

function pipeline(name: string, n: number): string {
  const values = Array.from({ length: n }, (_, i) => i).join(', ');
  return `name: ${name}\nrun:\n  concurrency: 8\nsearches:\n  - matrix:\n      n: [${values}]\n    query: "outage {n}"\n    limit: 3\n`;
}

function credits(sandbox: RunningSandbox): number {
  return sandbox.ledger().teams.sandbox?.creditsCharged ?? 0;
}

/** The highest attempt of any answered call of the run: 1 when no attempt was spent on failures. */
function highestAnsweredAttempt(dbPath: string, runId: string): number {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db
      .prepare(`SELECT max(attempt) FROM calls WHERE run_id = ? AND outcome = 'ok'`)
      .pluck()
      .get(runId) as number;
  } finally {
    db.close();
  }
}

let h: Harness | undefined;
let restarted: RunningSandbox | undefined;

afterEach(async () => {
  await restarted?.close();
  restarted = undefined;
  await h?.stop();
  h = undefined;
});

describe('an API outage', () => {
  it('pauses the run, probes, and finishes it with no task failed and no attempt spent', async () => {
    h = await startHarness({ sandbox: SANDBOX });
    const harness = h;
    const port = Number(new URL(harness.sandbox.url).port);
    const file = harness.writePipeline('outage', pipeline('it-outage', SEARCHES));
    const child = spawnCli(['run', file, '--local'], harness.settings, PROBE_ENV);
    const runId = await waitFor(
      'the run was recorded',
      () => harness.runtime.store.runs.latest()?.id,
    );
    await waitFor(
      'a fifth of the tasks done',
      () => harness.runtime.store.tasks.counts(runId).done >= SEARCHES / 5,
      { intervalMs: 50 },
    );
    const stoppedAt = Date.now();
    await harness.sandbox.close();
    const billedBefore = credits(harness.sandbox);

    const status = await waitFor(
      'status to say the API is unreachable',
      async () => (await runCli(['status', runId], harness.settings)).stdout,
      { until: (out) => out.includes('API unreachable since'), intervalMs: 500 },
    );
    expect(status).toMatch(/API unreachable since \d\d:\d\d, next probe in \d+s \(last error: /);
    // The outage outlasts the attempts a task would otherwise spend on it.
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS - (Date.now() - stoppedAt)));
    expect(harness.runtime.store.tasks.counts(runId).failed).toBe(0);
    restarted = await startSandbox({ port, ...SANDBOX });

    const code = await waitFor(
      'run --local to end',
      async () => {
        const exit = await Promise.race([child.exited, Promise.resolve('running' as const)]);
        return exit === 'running' ? undefined : { exit };
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(code.exit, child.stderr()).toBe(0);
    const counts = harness.runtime.store.tasks.counts(runId);
    expect(counts).toMatchObject({ total: SEARCHES, done: SEARCHES, failed: 0 });
    const stored = harness.runtime.store.calls.summary(runId).creditsUsed;
    expect(stored).toBe(billedBefore + credits(restarted));
    expect(highestAnsweredAttempt(harness.settings.dbPath, runId)).toBe(1);
  }, 120_000);

  it('an API address that never answered ends run --local at once: exit 3, the address named', async () => {
    h = await startHarness();
    const dead = `http://127.0.0.1:${await freePort()}`;
    const file = h.writePipeline('dead', pipeline('it-dead-api', 40));
    const r = await runCli(['run', file, '--local'], h.settings, {
      ...PROBE_ENV,
      HARVEST_API_URL: dead,
    });
    expect({ code: r.code, stderr: r.stderr }).toEqual({
      code: 3,
      stderr: expect.stringContaining(`API at ${dead} is not reachable`),
    });
    const runId = h.runtime.store.runs.latest()!.id;
    expect(r.stderr).toContain(`harvest run --resume ${runId} --local`);
    expect(h.runtime.store.tasks.counts(runId).failed).toBe(0);
  }, 60_000);

  it('run --wait --give-up-after stops following an outage: exit 3 and the resume command', async () => {
    h = await startHarness({ sandbox: SANDBOX });
    const harness = h;
    const file = harness.writePipeline('give-up', pipeline('it-give-up', 40));
    const { runId } = await startRun(harness.runtime, file, { logger: harness.logger });
    await harness.startPool({ concurrency: 2, settings: { apiProbeMaxMs: 1000 } });
    await waitFor('a few tasks done', () => harness.runtime.store.tasks.counts(runId).done >= 4);
    await harness.sandbox.close();
    await waitFor('the circuit to open', () =>
      readCircuit(harness.runtime.redis, harness.runtime.keys),
    );
    const r = await runCli(
      ['run', '--resume', runId, '--wait', '--give-up-after', '2s'],
      harness.settings,
    );
    expect({ code: r.code, stderr: r.stderr }).toEqual({
      code: 3,
      stderr: expect.stringContaining('gave up after 2 s (--give-up-after)'),
    });
    expect(r.stderr).toMatch(/API unreachable since \d\d:\d\d/);
    expect(r.stderr).toContain(`resume with: harvest run --resume ${runId} --wait`);
    expect(harness.runtime.store.tasks.counts(runId).failed).toBe(0);
  }, 60_000);
});
