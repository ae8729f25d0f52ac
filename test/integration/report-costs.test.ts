/**
 * `harvest report costs` against what the sandbox billed (its ledger), for real runs with
 * injected faults (408, 500) and a search worker killed with SIGKILL mid-run. The
 * calls the dead worker had in flight are LOST: the report shows them as unknown, never as zero.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import type { Pool } from '../../jobs/pool.ts';
import { InflightJournal } from '../../src/queue/inflight.ts';
import type { CostReport } from '../../src/report/costs/build.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { buildExportQuery, CALL_COLUMNS } from '../../src/store/index.ts';
import { type Harness, harvestEnv, startHarness } from '../helpers/harness.ts';
import { waitForDrained } from '../helpers/queues.ts';
import { waitFor } from '../helpers/wait.ts';

const BIN = path.resolve('bin/harvest.js');

let h: Harness | undefined;
let storePool: Pool | undefined;
const children = new Set<ChildProcess>();

afterEach(async () => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  await storePool?.close();
  storePool = undefined;
  await h?.stop();
  h = undefined;
});

const env = harvestEnv;

/** A search-only worker in its own process, with a short lock so its death is noticed fast. */
function spawnSearchWorker(harness: Harness): ChildProcess {
  const args = ['worker', '--roles', 'search', '-c', '8'];
  args.push('--lock-duration', '2000', '--stalled-interval', '1000');
  const child = spawn(process.execPath, [BIN, ...args], { env: env(harness), stdio: 'ignore' });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

function reportCosts(
  harness: Harness,
  args: string[],
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'report', 'costs', ...args], {
      env: env(harness),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out }));
  });
}

function ledger(harness: Harness) {
  const team = harness.sandbox.ledger().teams.sandbox;
  const calls = team?.calls ?? {};
  return {
    creditsCharged: team?.creditsCharged ?? 0,
    answers: Object.values(calls).reduce((a, b) => a + b, 0),
    byStatus: calls,
  };
}

function pipeline(name: string, n: number): string {
  const values = Array.from({ length: n }, (_, i) => i).join(', ');
  return `name: ${name}\nrun:\n  maxAttempts: 10\nsearches:\n  - matrix:\n      n: [${values}]\n    query: "cost report {n}"\n    limit: 4\n`;
}

describe('harvest report costs', () => {
  it('equals the sandbox ledger for a run with 408s and 500s', async () => {
    h = await startHarness({
      sandbox: {
        faults: { timeout408: 0.1, error500: 0.1 },
        latency: { minMs: 5, maxMs: 20 },
        seed: 7,
      },
    });
    await h.startPool({ concurrency: 6 });
    const file = h.writePipeline('faults', pipeline('it-costs-faults', 40));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    expect((await waitForRun(h.runtime, runId, { pollMs: 50 })).status).toBe('completed');

    const billed = ledger(h);
    const { code, out } = await reportCosts(h, [
      '--run',
      runId,
      '--by',
      'outcome',
      '--format',
      'json',
    ]);
    expect(code).toBe(0);
    const report = JSON.parse(out) as CostReport;
    expect(report.totals).toMatchObject({
      creditsUsed: billed.creditsCharged,
      unknownCostCalls: 0,
      calls: billed.answers,
      failedCalls: billed.answers - (billed.byStatus['200'] ?? 0),
    });
    expect(billed.creditsCharged).toBeGreaterThan(0);
    const byOutcome = Object.fromEntries(report.rows.map((r) => [r.key, r.calls]));
    expect(byOutcome).toEqual(
      Object.fromEntries(
        Object.entries({
          ok: billed.byStatus['200'],
          TIMEOUT: billed.byStatus['408'],
          SERVER_ERROR: billed.byStatus['500'],
        }).filter(([, n]) => n !== undefined),
      ),
    );
    // The faults happened, and every call beyond a task's first is a retry.
    expect(report.totals.failedCalls).toBeGreaterThan(0);
    expect(report.totals.retryCalls).toBe(billed.answers - 40);

    // The plan's estimate, recorded when the run was planned, beside what was charged.
    const compared = await reportCosts(h, ['--compare-estimate', '--format', 'json']);
    const [run] = (JSON.parse(compared.out) as CostReport).rows;
    expect(run).toMatchObject({ key: runId, creditsUsed: billed.creditsCharged });
    expect(run?.estimateMinCredits).toBeLessThanOrEqual(billed.creditsCharged);
    expect(run?.estimateMaxCredits).toBeGreaterThanOrEqual(billed.creditsCharged);

    // Without --format, the format of the file named by --out, as export does.
    const csvFile = path.join(h.dir, 'costs.csv');
    const toCsv = await reportCosts(h, ['--out', csvFile]);
    expect(toCsv.out).toContain('wrote the csv cost report');
    expect(readFileSync(csvFile, 'utf8').split('\r\n')[0]).toMatch(/^pipeline,calls,/);
    const jsonFile = path.join(h.dir, 'costs.json');
    await reportCosts(h, ['--out', jsonFile]);
    expect(JSON.parse(readFileSync(jsonFile, 'utf8'))).toMatchObject({ by: 'pipeline' });

    // Bad input: exit 2, and with --json the error as JSON on stdout.
    const unknown = await reportCosts(h, ['--run', 'no-such-run', '--json']);
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.out)).toMatchObject({
      ok: false,
      error: { code: 'RUN_NOT_FOUND', exitCode: 2 },
    });
  }, 60_000);

  it('shows the calls of a worker killed mid-run as unknown; known credits plus what those cost equal the ledger', async () => {
    h = await startHarness({
      sandbox: {
        faults: { timeout408: 0.05, error500: 0.05 },
        latency: { minMs: 150, maxMs: 300 },
      },
    });
    storePool = await startLocalPool(h.settings, {
      roles: ['store'],
      store: h.runtime.store,
      logger: h.logger,
    });
    const file = h.writePipeline('killed', pipeline('it-costs-killed', 80));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const victim = spawnSearchWorker(h);
    // Kill it while it has calls in flight (8 slots, 150-300 ms each).
    await waitFor('10 tasks done', () => h!.runtime.store.tasks.counts(runId).done >= 10, {
      timeoutMs: 30_000,
    });
    victim.kill('SIGKILL');
    await new Promise((r) => victim.once('exit', r));
    spawnSearchWorker(h);
    expect((await waitForRun(h.runtime, runId, { pollMs: 100 })).status).toBe('completed');
    // The dead worker's journaled calls are recorded as LOST once its heartbeat lapses.
    const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
    await waitFor('the journal to empty', () => journal.pending(), {
      until: (n) => n === 0,
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    expect(await journal.pending()).toBe(0);
    await waitForDrained(h!.runtime.storeQueue);

    const billed = ledger(h);
    const { code, out } = await reportCosts(h, ['--run', runId, '--format', 'json']);
    expect(code).toBe(0);
    const t = (JSON.parse(out) as CostReport).totals;
    expect(t.lostCalls).toBeGreaterThan(0);
    expect(t.unknownCostCalls).toBe(t.lostCalls);
    // What the service billed beyond what harvest knows is what the LOST calls it answered cost.
    // A search costs the same each time (the sandbox is deterministic per query): the cost of
    // the task's recorded call. The ledger's 200s beyond harvest's ok calls are those answered.
    const store = h.runtime.store;
    const calls = [
      ...store.exports.iterate(buildExportQuery(CALL_COLUMNS, { kind: 'calls', runId })),
    ];
    const col = (name: string) => CALL_COLUMNS.findIndex((c) => c.name === name);
    const lostCosts = calls
      .filter((c) => c[col('outcome')] === 'LOST')
      .map((c) => store.tasks.get(runId, String(c[col('task_key')]))?.creditsUsed ?? 0)
      .sort((a, b) => a - b);
    const okCalls = calls.filter((c) => c[col('outcome')] === 'ok').length;
    const answeredLost = (billed.byStatus['200'] ?? 0) - okCalls;
    expect(answeredLost).toBeGreaterThanOrEqual(0);
    expect(answeredLost).toBeLessThanOrEqual(lostCosts.length);
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    const extra = billed.creditsCharged - t.creditsUsed;
    expect(extra).toBeGreaterThanOrEqual(sum(lostCosts.slice(0, answeredLost)));
    expect(extra).toBeLessThanOrEqual(sum(lostCosts.slice(lostCosts.length - answeredLost)));
    if (answeredLost === 0) expect(t.creditsUsed).toBe(billed.creditsCharged);

    // People see the unknown calls as unknown, not as zero.
    const table = await reportCosts(h, ['--run', runId]);
    expect(table.out).toContain(`${t.creditsUsed} +${t.unknownCostCalls} unknown`);
    expect(table.out).toContain(
      `${t.unknownCostCalls} call(s) of unknown cost (${t.lostCalls} LOST`,
    );
  }, 90_000);
});
