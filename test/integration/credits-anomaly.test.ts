/**
 * Answers that bill implausible credits (the sandbox answering `creditsUsed: 1e15`): stored as
 * billed and flagged, shown by `status` and every format of the cost report, and counted
 * against the run's budget at what each request can cost at most, so the run's other tasks go
 * on instead of failing BUDGET_EXCEEDED.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { formatReport } from '../../src/cli/commands/status.ts';
import { buildCostReport } from '../../src/report/costs/build.ts';
import { buildCostCharts } from '../../src/report/costs/charts.ts';
import { renderHtml } from '../../src/report/costs/html.ts';
import { renderCsv, renderJson, renderTable } from '../../src/report/costs/text.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';

const INFLATED = 1e15;
const TASKS = 4;
/** What one search of the pipeline below can cost at most: one block of results, no scrape. */
const MOST_PER_SEARCH = 2;

let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe('implausible credits', () => {
  it('are stored as billed, flagged, reported, and do not fail the rest of a budgeted run', async () => {
    h = await startHarness({
      apiKey: 'fc-rich',
      sandbox: {
        inflatedCredits: INFLATED,
        keys: [{ key: 'fc-rich', team: 'rich', credits: 9_000_000_000_000_000 }],
      },
    });
    const file = h.writePipeline(
      'inflated',
      `name: inflated\nbudget:\n  maxCredits: 20\nsearches:\n  - matrix:\n      n: [1, 2, 3, 4]\n    query: "inflated {n}"\n    limit: 2\n`,
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    // One search at a time: each call's settle is in the counter before the next reserves.
    await h.startPool({ concurrency: 1 });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    const { store, redis, keys } = h.runtime;

    expect(final.status).toBe('completed');
    expect(store.tasks.counts(runId)).toMatchObject({ done: TASKS, failed: 0 });
    // Stored as billed, and flagged.
    expect(store.calls.summary(runId).creditsUsed).toBe(TASKS * INFLATED);
    expect(store.calls.anomalies(runId)).toEqual({
      calls: TASKS,
      creditsUsed: TASKS * INFLATED,
      creditsCounted: TASKS * MOST_PER_SEARCH,
    });
    // The budget counts each at what its request can cost at most.
    expect(Number(await redis.hget(keys.budget, runId))).toBe(TASKS * MOST_PER_SEARCH);

    const status = store.runStatus(runId);
    expect(status?.creditAnomalies.calls).toBe(TASKS);
    expect(status?.creditsRemaining).toBe(20 - TASKS * MOST_PER_SEARCH);
    expect(formatReport(status!, { paused: undefined, waiting: undefined })).toMatch(
      /anomaly {2}4 calls billed implausible credits/,
    );

    const report = buildCostReport(store, { by: 'run', runId });
    expect(report.totals).toMatchObject({ anomalyCalls: TASKS, anomalyCredits: TASKS * INFLATED });
    expect(renderTable(report)).toMatch(/4 implausible!/);
    expect(renderTable(report)).toMatch(/note: 4 call\(s\) billed implausible credits/);
    const [head, row] = renderCsv(report).split('\r\n');
    const columns = head!.split(',');
    expect(row!.split(',')[columns.indexOf('anomaly_calls')]).toBe(String(TASKS));
    expect(JSON.parse(renderJson(report)).totals.anomalyCalls).toBe(TASKS);
    const html = renderHtml(report, buildCostCharts(store, { runId }));
    expect(html).toMatch(/class="note anomaly">4 call\(s\) billed implausible credits/);
  }, 60_000);
});
