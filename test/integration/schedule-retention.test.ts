/**
 * A pipeline's `retention`, applied by the runs role after each of its scheduled runs: older
 * runs' results and calls go, the newest runs stay whole, and the cost report still counts every
 * credit (real parts: job schedulers on a fresh Redis prefix, the sandbox, a temp SQLite file).
 */
import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { waitForRun } from '../../src/run/wait.ts';
import type { TickRow } from '../../src/store/index.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { startHarness } from '../helpers/harness.ts';
import { applySchedule, runsQueue, waitForTicks } from '../helpers/schedule.ts';
import { waitFor } from '../helpers/wait.ts';

const defer = useCleanup();

const PIPELINE = `name: kept-short
searches:
  - query: "retention {n}"
    limit: 3
    matrix:
      n: [1, 2]
schedule:
  cron: "*/2 * * * * *"
retention:
  keepRuns: 1
`;

const started = (ticks: TickRow[]) => ticks.filter((t) => t.outcome === 'started');

/** Each run's credits as its tasks kept them (never pruned). */
function taskCredits(dbPath: string): Map<string, number> {
  const db = new Sqlite(dbPath, { readonly: true });
  try {
    const rows = db
      .prepare<[], { runId: string; credits: number }>(
        'SELECT run_id AS runId, SUM(credits_used) AS credits FROM tasks GROUP BY run_id',
      )
      .all();
    return new Map(rows.map((r) => [r.runId, r.credits]));
  } finally {
    db.close();
  }
}

describe('retention of a scheduled pipeline', () => {
  it('prunes the older runs after each scheduled run, and the costs stay', async () => {
    const h = await startHarness();
    defer(() => h.stop());
    const queue = runsQueue(h);
    defer(() => queue.close());
    await h.startPool({ roles: ['search', 'store', 'runs'], runs: { pollMs: 200 } });
    await applySchedule(queue, h.writePipeline('kept-short', PIPELINE));

    const ticks = await waitForTicks(h, 'kept-short', (t) => started(t).length >= 3, 30_000);
    const [first, second, third] = started(ticks).map((t) => t.runId as string);
    const store = h.runtime.store;
    await waitForRun(h.runtime, third!, { pollMs: 50 });
    // The third run's retention (keep 1) leaves the first two without rows.
    await waitFor(
      'the first two runs to be pruned',
      () => [first!, second!].map((id) => store.prune.footprint(id)),
      { until: (f) => f.every((r) => r.calls + r.results + r.media === 0), timeoutMs: 20_000 },
    );
    expect(store.results.count(third!)).toBeGreaterThan(0);
    expect(store.runs.get(first!)?.status).toBe('completed');

    const credits = taskCredits(h.settings.dbPath);
    for (const runId of [first!, second!, third!]) {
      const [row] = store.costs({ by: ['run'], runId });
      expect(row?.creditsUsed).toBe(credits.get(runId));
      expect(row?.calls).toBeGreaterThanOrEqual(2);
      expect(row?.results).toBeGreaterThan(0);
    }
  });
});
