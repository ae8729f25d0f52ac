/**
 * A cost report read while a run writes: its rows, runs and totals (and the HTML charts) come
 * from one read transaction, so the totals row is the sum of the rows whatever is committed
 * between two of its queries.
 */
import { describe, expect, it } from 'vitest';
import { buildCostReport } from '../../../src/report/costs/build.ts';
import { buildCostCharts } from '../../../src/report/costs/charts.ts';
import { costReportData } from '../../../src/report/costs/run-report.ts';
import type { Store } from '../../../src/store/index.ts';
import { callEvent, seedRun, useTempStores } from '../store/helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

describe('cost reports next to a writer', () => {
  const stores = useTempStores();

  /** A reader whose every `costs` query is followed by a call committed by `writer`. */
  function readerWithWriter(): { reader: Store; queries: () => number } {
    const writer = stores.open({ now: () => T0 });
    seedRun(writer, { runId: 'run-a', taskCount: 2 });
    seedRun(writer, { runId: 'run-b', pipeline: 'other', taskCount: 1 });
    writer.applyEvents([callEvent('run-a', 't0', { startedAt: T0, creditsUsed: 5 })]);
    const opened = stores.reopen(writer, { readonly: true });
    let queries = 0;
    const reader: Store = {
      ...opened,
      costs: (query) => {
        const groups = opened.costs(query);
        queries += 1;
        const runId = queries % 2 === 0 ? 'run-a' : 'run-b';
        writer.applyEvents([
          callEvent(runId, 't0', { startedAt: T0 + queries, creditsUsed: 3, attempt: queries + 1 }),
        ]);
        return groups;
      },
    };
    return { reader, queries: () => queries };
  }

  it('the totals row is the sum of its rows, for every grouping', () => {
    for (const by of ['pipeline', 'run', 'day', 'outcome'] as const) {
      const { reader, queries } = readerWithWriter();
      const report = buildCostReport(reader, { by, nowMs: T0 });
      expect(queries()).toBeGreaterThan(1);
      for (const k of ['calls', 'creditsUsed', 'results', 'failedCalls'] as const) {
        const sum = report.rows.reduce((a, row) => a + row[k], 0);
        expect({ by, k, sum }).toEqual({ by, k, sum: report.totals[k] });
      }
      // What was there when the report began, not what came after.
      expect(report.totals.creditsUsed).toBe(5);
    }
  });

  it("the charts agree with each other: each pipeline's credits by day add up to its total", () => {
    const { reader } = readerWithWriter();
    const charts = buildCostCharts(reader, {});
    expect(charts.creditsPerResult.map((p) => p.pipeline)).toEqual(charts.pipelines);
    for (const [i, pipeline] of charts.pipelines.entries()) {
      const byDay = (charts.creditsByDay[i] ?? []).reduce((a, n) => a + n, 0);
      const total = charts.creditsPerResult.find((p) => p.pipeline === pipeline)?.credits ?? 0;
      expect({ pipeline, byDay }).toEqual({ pipeline, byDay: total });
    }
    expect(charts.callsByOutcome).toEqual([{ outcome: 'ok', calls: 1 }]);
  });

  it("the HTML report's charts add up to its table: one read transaction for both", () => {
    const { reader, queries } = readerWithWriter();
    const { report, charts } = costReportData(reader, {
      by: 'pipeline',
      nowMs: T0,
      format: 'html',
    });
    expect(queries()).toBeGreaterThan(2);
    const charted = (charts?.creditsByDay ?? []).flat().reduce((a, n) => a + n, 0);
    expect(charted).toBe(report.totals.creditsUsed);
    expect(report.totals.creditsUsed).toBe(5);
  });
});
