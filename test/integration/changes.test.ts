/**
 * Changes between runs on real parts: the sandbox's world advances an epoch between two runs of
 * a pipeline (some pages change, some results swap places, some drop out and others come in),
 * and harvest classifies the second run against the first, search by search; `harvest changes`
 * and `harvest history` print it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { spawnCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const PIPELINE = `
name: it-changes
defaults:
  limit: 10
  scrapeOptions:
    formats: [markdown]
searches:
  - id: topics
    query: "{topic} market report"
    matrix:
      topic: [solar, wind]
      country: [US, DE]
`;

async function runOnce(harness: Harness, file: string): Promise<string> {
  const { runId } = await startRun(harness.runtime, file, { logger: harness.logger });
  const final = await waitForRun(harness.runtime, runId, { pollMs: 50 });
  expect(final.status).toBe('completed');
  return runId;
}

describe('changes between runs', () => {
  it('classifies every kind of change the world made, each matrix cell against itself', async () => {
    h = await startHarness({ sandbox: { epochShares: { content: 0.3, rank: 0.3, churn: 0.2 } } });
    const file = h.writePipeline('changes', PIPELINE);
    await h.startPool();
    const first = await runOnce(h, file);
    const advanced = await fetch(`${h.sandbox.url}/_sandbox/epoch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ advance: 1 }),
    });
    expect(advanced.status).toBe(200);
    const second = await runOnce(h, file);

    const store = h.runtime.store;
    const before = store.results.count(first);
    expect(before).toBeGreaterThan(10);
    expect(store.changes.recorded(first)).toMatchObject({ baselineRunId: null, new: before });
    const report = store.changes.report(second, { all: true })!;
    expect(report.baselineRunId).toBe(first);
    const { totals } = report;
    expect(totals.results).toBe(store.results.count(second));
    // Each of the first run's results is still there (same or changed) or dropped.
    expect(totals.same + totals.changed + totals.dropped).toBe(before);
    for (const kind of ['new', 'same', 'changed', 'dropped', 'movedUp', 'movedDown'] as const) {
      expect(totals[kind], kind).toBeGreaterThan(0);
    }
    expect(totals.new).toBe(totals.dropped);
    // Four searches (2 topics x 2 countries), each compared with itself.
    expect(report.searches.map((s) => s.label).sort()).toEqual([
      'topics: solar market report (country=DE)',
      'topics: solar market report (country=US)',
      'topics: wind market report (country=DE)',
      'topics: wind market report (country=US)',
    ]);

    const cli = spawnCli(['changes', '--pipeline', 'it-changes', '--detail'], h.settings);
    expect(await cli.exited).toBe(0);
    expect(cli.stdout()).toContain(`changes in run ${second} (it-changes, completed`);
    expect(cli.stdout()).toMatch(/^changed \(\d+\)$/m);
    expect(cli.stdout()).toMatch(/^ {4}@@ /m);

    const changed = report.results.find((r) => r.status === 'changed')!;
    const history = spawnCli(['history', '--url', changed.url, '--format', 'json'], h.settings);
    expect(await history.exited).toBe(0);
    const points = JSON.parse(history.stdout()) as { runId: string; contentHash: string }[];
    const ofSearch = points.filter((p) => p.runId === first || p.runId === second);
    expect(new Set(ofSearch.map((p) => p.contentHash)).size).toBeGreaterThan(1);
  });
});
