import { parse as parseCsv } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { buildCostReport } from '../../../src/report/costs/build.ts';
import { renderCsv, renderJson, renderTable } from '../../../src/report/costs/text.ts';
import { callEvent, resultsEvent, seedRun, useTempStores, webItem } from '../store/helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

describe('cost reports', () => {
  const stores = useTempStores();

  function seeded() {
    const store = stores.open({ now: () => T0 });
    seedRun(store, { runId: 'run-a', taskCount: 2, maxCredits: 40 });
    store.runEstimates.set('run-a', { minCredits: 0, maxCredits: 24, tasks: 2 });
    seedRun(store, { runId: 'run-b', pipeline: 'other', taskCount: 1 });
    const ok = callEvent('run-a', 't0', { startedAt: T0, creditsUsed: 10 });
    store.applyEvents([
      ok,
      resultsEvent('run-a', 't0', [webItem(1), webItem(2), webItem(3), webItem(4)], {
        callId: ok.callId,
      }),
      callEvent('run-a', 't1', {
        startedAt: T0 + 1,
        outcome: 'LOST',
        status: null,
        creditsUsed: null,
      }),
      callEvent('run-a', 't1', { startedAt: T0 + 2, creditsUsed: 2 }),
      callEvent('run-a', 't0', { startedAt: T0 + 3, creditsUsed: 10, purpose: 'media-reissue' }),
    ]);
    return store;
  }

  it('shows unknown costs as unknown, never as zero, in every format', () => {
    const store = seeded();
    const report = buildCostReport(store, { by: 'run', compareEstimate: true, nowMs: T0 });
    expect(report.rows.map((r) => [r.key, r.creditsUsed, r.unknownCostCalls])).toEqual([
      ['run-a', 22, 1],
      ['run-b', 0, 0],
    ]);
    expect(report.rows[0]).toMatchObject({
      pipeline: 'news-watch',
      budgetCredits: 40,
      budgetUse: 22 / 40,
      estimateMinCredits: 0,
      estimateMaxCredits: 24,
      creditsPerResult: 22 / 4,
      retryCalls: 1,
      retryCredits: 2,
      reissueCalls: 1,
      reissueCredits: 10,
    });
    // A run that made no call yet is listed, at zero.
    expect(report.rows[1]).toMatchObject({
      calls: 0,
      estimateMinCredits: null,
      budgetCredits: null,
    });

    const table = renderTable(report);
    expect(table).toContain('credits by run (all runs): 22 +1 unknown over 4 calls');
    expect(table).toMatch(
      /run-a\s+news-watch\s+4\s+1\s+22 \+1 unknown\s+1\s+4\s+5\.50\s+1 \(2 cr\)\s+1 \(10 cr\)\s+22\/40 \(55%\)\s+0\.\.24/,
    );
    expect(table).toContain('note: 1 call(s) of unknown cost (1 LOST with their worker)');

    const csv = parseCsv(renderCsv(report), { columns: true }) as Record<string, string>[];
    expect(csv[0]).toMatchObject({
      run: 'run-a',
      credits: '22',
      unknown_cost_calls: '1',
      lost_calls: '1',
      estimate_min_credits: '0',
      estimate_max_credits: '24',
      budget_use: '0.55',
    });
    const json = JSON.parse(renderJson(report));
    expect(json.totals).toMatchObject({ creditsUsed: 22, unknownCostCalls: 1, calls: 4 });
    expect(json.rows[0]).not.toHaveProperty('keys');
  });

  it('refuses --compare-estimate without --by run, and unknown runs, with exit 2', () => {
    const store = seeded();
    expect(() => buildCostReport(store, { by: 'day', compareEstimate: true })).toThrow(
      expect.objectContaining({ exitCode: 2, message: expect.stringContaining('--by run') }),
    );
    expect(() => buildCostReport(store, { runId: 'nope' })).toThrow(
      expect.objectContaining({ code: 'RUN_NOT_FOUND', exitCode: 2 }),
    );
  });

  it('says so when nothing was called', () => {
    const store = stores.open({ now: () => T0 });
    const report = buildCostReport(store, { nowMs: T0 });
    expect(report.rows).toEqual([]);
    expect(renderTable(report)).toContain('note: no calls recorded for this selection');
    expect(report.totals).toMatchObject({ calls: 0, creditsUsed: 0, creditsPerResult: null });
  });

  it("writes a text cell a spreadsheet would run as a formula with a leading ', numbers as they are", () => {
    const store = stores.open({ now: () => T0 });
    seedRun(store, { runId: 'run-f', pipeline: '=HYPERLINK("http://x","y")', taskCount: 1 });
    store.applyEvents([callEvent('run-f', 't0', { startedAt: T0, creditsUsed: 3 })]);
    const report = buildCostReport(store, { by: 'pipeline', nowMs: T0 });
    const safe = renderCsv(report);
    expect(safe.split('\r\n')[1]).toMatch(/^"'=HYPERLINK\(""http:\/\/x"",""y""\)",1,0,3,/);
    const rows = parseCsv(safe, { columns: true }) as Record<string, string>[];
    expect(rows[0]).toMatchObject({ pipeline: `'=HYPERLINK("http://x","y")`, credits: '3' });
    const raw = parseCsv(renderCsv(report, { csvRaw: true }), { columns: true });
    expect(raw[0]).toMatchObject({ pipeline: '=HYPERLINK("http://x","y")', credits: '3' });
  });
});
