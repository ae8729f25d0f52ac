/**
 * Rate limits learned from the sandbox's 429s by pools sharing one Redis: real sandbox, Redis,
 * SQLite and BullMQ. Windows of 2 s stand in for the hosted service's minute (the 429 text
 * names them, "req/2s", as it names the minute "req/min").
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import type { RateLimitMode } from '../../src/sandbox/rate-limit.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait.ts';

const WINDOW_MS = 2000;
const defer = useCleanup();
let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

interface Call {
  startedAt: number;
  outcome: string;
  attempt: number;
}

async function harness(mode: RateLimitMode, limit: number): Promise<Harness> {
  h = await startHarness({
    sandbox: { rateLimitPerMinute: limit, rateLimitMode: mode, rateLimitWindowMs: WINDOW_MS },
  });
  return h;
}

/** A second pool, search role only, as on another host: its events go through the store queue. */
async function searchOnlyPool(h: Harness, concurrency: number): Promise<void> {
  const pool = await startLocalPool(h.settings, {
    roles: ['search'],
    concurrency,
    logger: h.logger,
  });
  defer(() => pool.close());
}

/** Runs `n` one-result searches to the end; every call made, in start order. */
async function run(h: Harness, n: number, during?: () => Promise<void>): Promise<Call[]> {
  const matrix = Array.from({ length: n }, (_, i) => i).join(', ');
  const file = h.writePipeline(
    'rate',
    `name: it-rate\nrun:\n  maxAttempts: 1\nsearches:\n  - matrix:\n      n: [${matrix}]\n    query: "rate {n}"\n    limit: 1\n`,
  );
  const { runId } = await startRun(h.runtime, file, { logger: h.logger });
  await during?.();
  const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
  expect(final).toMatchObject({ status: 'completed', done: n });
  const db = new Database(h.settings.dbPath, { readonly: true });
  try {
    return db
      .prepare(
        'SELECT started_at AS startedAt, outcome, attempt FROM calls WHERE run_id = ? ORDER BY started_at',
      )
      .all(runId) as Call[];
  } finally {
    db.close();
  }
}

const limited = (calls: Call[]) => calls.filter((c) => c.outcome === 'RATE_LIMITED');
/** The end of the sandbox's (clock-aligned) window that holds `ms`. */
const windowEnd = (ms: number) => (Math.floor(ms / WINDOW_MS) + 1) * WINDOW_MS;
/** Bursts of refused calls, apart by more than half a second. */
const waves = (refused: Call[]) =>
  refused.filter((c, i) => i === 0 || c.startedAt - refused[i - 1]!.startedAt > 500).length;
/** A call starts a few ms before its request reaches the sandbox. */
const SLACK_MS = 50;

describe('rate limits learned from 429s', () => {
  it('fixed windows: two pools share the learned window; no 429 after the first window', async () => {
    const h = await harness('fixed', 10);
    await h.startPool({ concurrency: 4 });
    await searchOnlyPool(h, 4);
    const calls = await run(h, 30);

    const refused = limited(calls);
    expect(refused.length).toBeGreaterThan(0);
    // Only the calls in flight when the first 429 arrived (8 slots) meet one.
    expect(refused.length).toBeLessThanOrEqual(8);
    const firstEnd = windowEnd(refused[0]!.startedAt);
    for (const call of refused) expect(call.startedAt).toBeLessThan(firstEnd + SLACK_MS);
    // A 429 spends no attempt; the sandbox saw what harvest recorded.
    expect(new Set(calls.map((c) => c.attempt))).toEqual(new Set([1]));
    expect(h.sandbox.ledger().teams.sandbox?.calls['429']).toBe(refused.length);
  });

  it('the limit halved mid-run: 429s stop within one window of the change', async () => {
    const h = await harness('fixed', 10);
    await h.startPool({ concurrency: 4 });
    await searchOnlyPool(h, 4);
    let changedAt = 0;
    const calls = await run(h, 30, async () => {
      await waitFor(
        '12 calls answered',
        () => h.sandbox.ledger().teams.sandbox?.calls['200'] ?? 0,
        {
          until: (n) => n >= 12,
          intervalMs: 10,
        },
      );
      changedAt = Date.now();
      // As a plan change would: what the current window counted stays.
      h.sandbox.control.setRateLimit({ perMinute: 5, keepCounts: true });
    });

    const refused = limited(calls);
    const firstEnd = windowEnd(refused[0]!.startedAt);
    // Calls started just before the change may arrive after it.
    const afterChange = refused.filter((c) => c.startedAt >= changedAt - 200);
    for (const call of refused) {
      if (call.startedAt < changedAt - 200)
        expect(call.startedAt).toBeLessThan(firstEnd + SLACK_MS);
    }
    expect(afterChange.length).toBeGreaterThan(0);
    // Settled within one window of the change (plus the second to which a 429 names a reset).
    for (const call of afterChange) {
      expect(call.startedAt).toBeLessThan(changedAt + WINDOW_MS + 1000);
    }
  });

  it('sliding log: one pool of two BullMQ workers; at most one more wave after the first', async () => {
    const h = await harness('sliding', 10);
    // 20 slots: two BullMQ workers of 10.
    await h.startPool({ concurrency: 20 });
    const calls = await run(h, 50);
    const refused = limited(calls);
    // The first wave (the slots in flight), then at most one more: a burst at a reset that
    // outruns the calls leaving the log tells a sliding log from a fixed window. From then on
    // the log is mirrored.
    expect(waves(refused)).toBeGreaterThanOrEqual(1);
    expect(waves(refused)).toBeLessThanOrEqual(2);
    expect(refused.length).toBeLessThanOrEqual(2 * 20 + 10);
    expect(new Set(calls.map((c) => c.attempt))).toEqual(new Set([1]));
  });

  it('token bucket: the first wave tells a refill; then paced, no other 429', async () => {
    // 20 per 10 s: a burst of 20, then one token every 500 ms.
    h = await startHarness({
      sandbox: { rateLimitPerMinute: 20, rateLimitMode: 'token-bucket', rateLimitWindowMs: 10_000 },
    });
    await h.startPool({ concurrency: 20 });
    const calls = await run(h, 30);
    const refused = limited(calls);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length).toBeLessThanOrEqual(20);
    for (const call of refused) expect(call.startedAt).toBeLessThan(refused[0]!.startedAt + 1000);
    // Paced just under the refill, not in bursts: the 10 calls beyond the burst. (On a loaded
    // machine a call of the burst may start just after the wave's last 429: counted, not paced.)
    const after = calls.filter((c) => c.startedAt > refused.at(-1)!.startedAt);
    expect(after.length).toBeGreaterThanOrEqual(30 - 20);
    const paced = after.slice(-(30 - 20));
    expect(paced.at(-1)!.startedAt - paced[0]!.startedAt).toBeGreaterThanOrEqual(9 * 480);
    expect(new Set(calls.map((c) => c.attempt))).toEqual(new Set([1]));
  });
});
