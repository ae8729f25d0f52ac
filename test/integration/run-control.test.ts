/**
 * Runs are the user's to control: Ctrl-C of a local run interrupts it (and nobody else works
 * it), `harvest cancel`, `--resume --retry-failed`, the pipeline's concurrency on resume, and
 * a pause for the API key that a later run lifts once the key works.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InflightJournal } from '../../src/queue/inflight.ts';
import { searchJobId } from '../../src/queue/names.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type CliProcess, runCli, spawnCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { waitForDrained } from '../helpers/queues.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
const children = new Set<CliProcess>();

afterEach(async () => {
  for (const c of children) c.child.kill('SIGKILL');
  children.clear();
  await h?.stop();
  h = undefined;
});

function matrix(name: string, n: number, extra = ''): string {
  const values = Array.from({ length: n }, (_, i) => i).join(', ');
  return `name: ${name}\n${extra}searches:\n  - matrix:\n      n: [${values}]\n    query: "${name} {n}"\n    limit: 2\n`;
}

function spawn(args: string[], extra: NodeJS.ProcessEnv = {}): CliProcess {
  const p = spawnCli(args, h!.settings, extra);
  children.add(p);
  return p;
}

function ledgerCalls(status?: string): number {
  const team = h!.sandbox.ledger().teams.sandbox;
  if (!team) return 0;
  if (status) return team.calls[status] ?? 0;
  return Object.values(team.calls).reduce((a, b) => a + b, 0);
}

describe('run control', () => {
  it('Ctrl-C of run --local interrupts that run; another run does not work its tasks; --resume finishes it', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 150, maxMs: 300 } } });
    const fileA = h.writePipeline('a', matrix('it-interrupt-a', 60));
    const fileB = h.writePipeline('b', matrix('it-interrupt-b', 3));
    const a = spawn(['run', fileA, '--local', '-c', '4', '--json']);
    const runADone = () => {
      const run = h!.runtime.store.runs.latest();
      return run === undefined ? 0 : h!.runtime.store.tasks.counts(run.id).done;
    };
    await waitFor('run A to start working (4 tasks done)', runADone, {
      until: (n) => n >= 4,
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    const runA = h.runtime.store.runs.latest()!.id;
    a.child.kill('SIGINT');
    expect(await a.exited).toBe(4);
    expect(a.stderr()).toContain(`harvest run --resume ${runA}`);

    const store = h.runtime.store;
    expect(store.runs.get(runA)?.status).toBe('interrupted');
    // Calls in flight finished and were recorded: the journal is empty, the bill matches.
    expect(await new InflightJournal(h.runtime.redis, h.runtime.keys).pending()).toBe(0);
    expect(store.calls.totals(runA).creditsUsed).toBe(
      h.sandbox.ledger().teams.sandbox?.creditsCharged,
    );
    const stoppedAt = store.tasks.counts(runA);
    expect(stoppedAt.done).toBeLessThan(60);
    // The summary is printed once the calls in flight are recorded, not as the stop begins.
    expect(JSON.parse(a.stdout())).toMatchObject({
      ok: false,
      exitCode: 4,
      status: 'interrupted',
      done: stoppedAt.done,
      calls: store.calls.totals(runA).calls,
      creditsUsed: store.calls.totals(runA).creditsUsed,
    });
    // Its time is how long it was followed (4 tasks of 150-300 ms each, at least), not the
    // moment the summary was read.
    expect(JSON.parse(a.stdout()).elapsedMs).toBeGreaterThanOrEqual(150);
    // None of its unfinished tasks has a job waiting in the queue.
    const jobs = await h.runtime.searchQueue.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(jobs.filter((j) => j.id?.startsWith(`${runA}.`))).toEqual([]);

    // Another pipeline's local run works its own tasks only.
    const b = await runCli(['run', fileB, '--local'], h.settings);
    expect(b.code).toBe(0);
    expect(store.tasks.counts(runA)).toEqual(stoppedAt);
    expect(store.runs.get(runA)?.status).toBe('interrupted');

    const resumed = await runCli(['run', '--resume', runA, '--local'], h.settings);
    expect(resumed.code).toBe(0);
    expect(store.tasks.counts(runA).done).toBe(60);
    expect(store.runs.get(runA)?.status).toBe('completed');
  }, 120_000);

  it('a second Ctrl-C stops at once and records the calls in flight as lost', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 15_000, maxMs: 15_000 } } });
    // Many queued jobs: taking them off the queue (the first Ctrl-C) outlasts the second one,
    // which must still leave the run interrupted with none of them queued.
    const file = h.writePipeline('forced', matrix('it-forced', 3000));
    const p = spawn(['run', file, '--local', '-c', '4']);
    const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
    await waitFor('four calls in flight', () => journal.pending(), {
      until: (n) => n === 4,
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    p.child.kill('SIGINT');
    await waitFor('the first stop said', () => p.stderr().includes('stopping run'), {
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(4);
    const runId = h.runtime.store.runs.latest()!.id;
    expect(h.runtime.store.calls.summary(runId)).toMatchObject({
      calls: 4,
      byOutcome: { LOST: 4 },
      unknownCostCalls: 4,
    });
    expect(await journal.pending()).toBe(0);
    expect(h.runtime.store.runs.get(runId)?.status).toBe('interrupted');
    const jobs = await h.runtime.searchQueue.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(jobs.filter((j) => j.id?.startsWith(`${runId}.`))).toEqual([]);
  }, 90_000);

  it('harvest cancel removes queued jobs, lets calls in flight finish, and marks the run cancelled', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 400, maxMs: 400 } } });
    const file = h.writePipeline('cancel', matrix('it-cancel', 40));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await h.startPool({ concurrency: 3 });
    const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
    await waitFor('calls in flight', () => journal.pending(), {
      until: (n) => n > 0,
      timeoutMs: 30_000,
      intervalMs: 50,
    });

    const cancelled = await runCli(['cancel', runId, '--json'], h.settings);
    expect(cancelled.code).toBe(0);
    const report = JSON.parse(cancelled.stdout) as { removedJobs: number; callsInFlight: number };
    expect(report.removedJobs).toBeGreaterThan(0);
    expect(report.callsInFlight).toBeGreaterThan(0);

    await waitFor('calls in flight to finish', () => journal.pending(), {
      until: (n) => n === 0,
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    // Every job left ends: finished, or dropped when taken after the stop.
    await waitForDrained(h.runtime.searchQueue);
    const store = h.runtime.store;
    expect(store.runs.get(runId)?.status).toBe('cancelled');
    const counts = store.tasks.counts(runId);
    expect(counts.done).toBeLessThan(40);
    // Every task was either taken by a worker before the stop reached it (and finished), taken
    // after (and dropped, unrun), or removed from the queue.
    const dropped = (await h.runtime.searchQueue.getFailed()).filter((j) =>
      j.failedReason.includes('was cancelled'),
    ).length;
    expect(counts.done + dropped + report.removedJobs).toBe(40);
    // Every call made was recorded, and no job of the run is left to start.
    expect(store.calls.totals(runId).calls).toBe(ledgerCalls());
    expect(await h.runtime.searchQueue.getWaitingCount()).toBe(0);
    const again = await runCli(['cancel', runId], h.settings);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already finished (cancelled)');
  }, 60_000);

  it("--resume --retry-failed enqueues failed tasks again, at the pipeline's concurrency", async () => {
    // The sandbox refuses more than 2 requests in flight: the pipeline asks for 2.
    h = await startHarness({ sandbox: { maxConcurrency: 2, faults: { error500: 1 } } });
    const file = h.writePipeline(
      'retry',
      matrix('it-retry', 12, 'run:\n  concurrency: 2\n  maxAttempts: 1\n'),
    );
    const first = await runCli(['run', file, '--local'], h.settings);
    expect(first.code).toBe(1);
    const runId = h.runtime.store.runs.latest()!.id;
    expect(h.runtime.store.tasks.counts(runId)).toMatchObject({ failed: 12, done: 0 });

    h.sandbox.control.setFaults({});
    const plain = await runCli(['run', '--resume', runId, '--local'], h.settings);
    expect(plain.code).toBe(1);
    expect(h.runtime.store.tasks.counts(runId).failed).toBe(12);
    expect(plain.stderr).toContain(
      `12 failed tasks stay failed: \`harvest run --resume ${runId} --retry-failed\``,
    );

    const retried = await runCli(
      ['run', '--resume', runId, '--retry-failed', '--local'],
      h.settings,
    );
    expect(retried.code).toBe(0);
    expect(retried.stderr).toContain('12 failed tasks enqueued again');
    expect(h.runtime.store.tasks.counts(runId)).toMatchObject({ failed: 0, done: 12 });
    expect(ledgerCalls('429')).toBe(0);
  }, 60_000);

  it('a pause for the API key holds every run; a new run lifts it once the key works', async () => {
    h = await startHarness();
    const file = h.writePipeline('key', matrix('it-key', 3));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const wrongKey = await h.startPool({ concurrency: 2, apiKey: 'fc-wrong' });
    const paused = await waitForRun(h.runtime, runId, { pollMs: 50 });
    // The workers with the wrong key are stopped; the key is fixed where runs start.
    await wrongKey.close();
    expect(paused.paused?.code).toBe('UNAUTHORIZED');
    const status = await runCli(['status', runId], h.settings);
    expect(status.stdout).toContain('(the API key: every unfinished run waits)');

    const refused = await runCli(['run', file, '--wait'], h.settings, {
      HARVEST_API_KEY: 'fc-bad',
    });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('the key still does not work');
    expect(h.runtime.store.runs.list()).toHaveLength(1);

    // A 408 says nothing of the key: the check is tried again, and when the service cannot
    // answer at all the run is not started, without blaming the key.
    h.sandbox.control.setFaults({ timeout408: 1 });
    const unchecked = await runCli(['run', file, '--wait'], h.settings);
    expect(unchecked.code).toBe(3);
    expect(unchecked.stderr).toContain('the key could not be checked');
    expect(unchecked.stderr).toContain('checking the API key: ');
    expect(unchecked.stderr).not.toContain('still does not work');
    expect(h.sandbox.ledger().teams.sandbox?.calls['408']).toBe(4);
    h.sandbox.control.setFaults({});
    expect(h.runtime.store.runs.list()).toHaveLength(1);

    const fixed = await runCli(['run', file, '--local'], h.settings);
    expect(fixed.stderr).toContain('the API key works again');
    expect(fixed.code).toBe(0);
    expect(await h.runtime.searchQueue.isPaused()).toBe(false);
    // The run held by the pause was worked too, by the same local workers.
    expect(h.runtime.store.tasks.counts(runId).done).toBe(3);
  }, 60_000);

  it('run --wait with no worker taking jobs says so', async () => {
    h = await startHarness();
    const file = h.writePipeline('idle', matrix('it-idle', 2));
    const p = spawn(['run', file, '--wait']);
    await waitFor('the notice', () => p.stderr().includes('no worker is taking search jobs'), {
      intervalMs: 50,
    });
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(4);
    expect(p.stderr()).toContain('the run goes on with the workers');
    const runId = h.runtime.store.runs.latest()!.id;
    expect(h.runtime.store.runs.get(runId)?.status).toBe('running');
    expect(
      await h.runtime.searchQueue.getJob(
        searchJobId(runId, [...h.runtime.store.tasks.unfinished(runId)][0]!.key),
      ),
    ).toBeDefined();
  }, 40_000);
});
