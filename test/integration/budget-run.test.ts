/**
 * A run's budget under concurrency and crashes, end to end (real Redis, the sandbox on port 0,
 * a temp SQLite file): a task the budget refuses only for the reservations of calls in flight
 * waits for them instead of failing, and a call lost with a dead worker stays counted (the
 * service billed it), so the bill never passes the budget.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { InflightJournal } from '../../src/queue/inflight.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { startLocalPool } from '../../src/worker/local.ts';
import type { Pool } from '../../src/worker/pool.ts';
import { type Harness, harvestEnv, startHarness } from '../helpers/harness.ts';

const BIN = path.resolve('bin/harvest.js');
let h: Harness | undefined;
const children = new Set<ChildProcess>();
const pools: Pool[] = [];

afterEach(async () => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  for (const p of pools.splice(0)) await p.close();
  await h?.stop();
  h = undefined;
});

const MAX_CREDITS = 24; // 12 tasks' worst case (limit 4: 0..2 credits each)
const WORST = 2;
const pipeline = (name: string) => `name: ${name}
searches:
  - matrix:
      n: [${Array.from({ length: 40 }, (_, i) => i).join(', ')}]
    query: "budget run {n}"
    limit: 4
budget:
  maxCredits: ${MAX_CREDITS}
`;

describe('a budgeted run', () => {
  it('fails no task over budget while what was spent plus its worst case fits', async () => {
    // 16 calls in flight reserve 32 credits of 24: the others wait for them to settle.
    h = await startHarness({ sandbox: { latency: { minMs: 200, maxMs: 400 } } });
    await h.startPool({ concurrency: 16 });
    const { runId } = await startRun(h.runtime, h.writePipeline('b', pipeline('budget-wait')), {
      logger: h.logger,
    });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    const spent = h.runtime.store.calls.totals(runId).creditsUsed;
    expect(spent).toBe(h.sandbox.ledger().teams.sandbox?.creditsCharged);
    expect(spent).toBeLessThanOrEqual(MAX_CREDITS);
    // Refused "over budget" only once no further task's worst case fitted.
    expect(final.failed).toBeGreaterThan(0);
    expect(spent + WORST).toBeGreaterThan(MAX_CREDITS);
  }, 60_000);

  it('the service never bills more than budget.maxCredits, even when a worker dies mid-call', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 1200, maxMs: 1200 } } });
    const file = h.writePipeline('budget-lost', pipeline('budget-lost'));
    // The database host: store role only (it also reaps the calls of dead workers).
    pools.push(
      await startLocalPool(h.settings, {
        roles: ['store'],
        store: h.runtime.store,
        logger: h.logger,
        lockDurationMs: 1000,
      }),
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const child = spawn(
      process.execPath,
      [
        BIN,
        'worker',
        '--roles',
        'search',
        '-c',
        '8',
        '--lock-duration',
        '1000',
        '--stalled-interval',
        '500',
      ],
      { env: harvestEnv(h), stdio: 'ignore' },
    );
    children.add(child);
    const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
    while ((await journal.pending()) < 8) await sleep(10);
    await sleep(400); // the requests have reached the service (it answers after 1.2 s)
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // The 8 calls reach the service and are billed; their worker is gone.
    while ((await journal.pending()) > 0) await sleep(100);

    pools.push(
      await startLocalPool(h.settings, {
        roles: ['search'],
        concurrency: 8,
        logger: h.logger,
        lockDurationMs: 1000,
        stalledIntervalMs: 500,
      }),
    );
    await waitForRun(h.runtime, runId, { pollMs: 100 });
    await sleep(500);
    const team = h.sandbox.ledger().teams.sandbox!;
    const stored = h.runtime.store.calls.summary(runId);
    expect(stored.byOutcome.LOST).toBe(8);
    expect(team.creditsCharged).toBeLessThanOrEqual(MAX_CREDITS);
  }, 90_000);
});
