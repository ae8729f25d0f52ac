/**
 * Export filters that exclude each other are refused, `--unique-urls` keeps the row that saw a
 * URL first, and a retry or re-issue of unknown cost is shown as unknown, never as zero credits.
 */
import { describe, expect, it } from 'vitest';
import { formatMediaCounts } from '../../../src/cli/actions/media.ts';
import { buildCostReport } from '../../../src/report/costs/build.ts';
import { renderTable } from '../../../src/report/costs/text.ts';
import { type ExportOptions, runExport } from '../../../src/report/export/run-export.ts';
import type { Store } from '../../../src/store/index.ts';
import { textSink } from '../../helpers/text-sink.ts';
import { callEvent, resultsEvent, seedRun, useTempStores, webItem } from '../store/helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

async function exportText(store: Store, options: Partial<ExportOptions>): Promise<string> {
  const out = textSink();
  await runExport(store, { format: 'csv', readerThreads: 0, ...options }, { stdout: out });
  return out.text();
}

describe('export filters', () => {
  const stores = useTempStores();

  it('--run R --only-new --since-run S refuses an S of another pipeline (as --pipeline does), instead of exporting nothing', async () => {
    let now = T0;
    const store = stores.open({ now: () => (now += 1000) });
    seedRun(store, { runId: 'a1', pipeline: 'alpha', taskCount: 1 });
    seedRun(store, { runId: 'b1', pipeline: 'beta', taskCount: 1 });
    store.applyEvents([
      resultsEvent('a1', 't0', [webItem(1)], { fetchedAt: T0 + 10_000 }),
      resultsEvent('b1', 't0', [webItem(2)], { fetchedAt: T0 + 20_000 }),
    ]);
    // The same mistake with --pipeline is bad input (exit 2).
    const viaPipeline = await runExport(
      store,
      { format: 'csv', pipelineName: 'alpha', onlyNew: true, sinceRunId: 'b1' },
      { stdout: textSink() },
    ).then(
      () => undefined,
      (e: { exitCode?: number }) => e,
    );
    expect(viaPipeline?.exitCode).toBe(2);
    // With --run too: --since-run's pipeline (beta) and the run's (alpha) exclude each other,
    // which would export an empty file.
    const viaRun = await runExport(
      store,
      { format: 'csv', runId: 'a1', onlyNew: true, sinceRunId: 'b1', fields: ['run_id', 'url'] },
      { stdout: textSink() },
    ).then(
      (summary) => ({ rows: summary.rows }),
      (e: { exitCode?: number }) => e,
    );
    expect(viaRun).toEqual(expect.objectContaining({ exitCode: 2 }));
  });

  it('--unique-urls keeps the row where the URL was first seen, not the row of a slot filled earlier with another URL', async () => {
    const store = stores.open({ now: () => T0 });
    seedRun(store, { runId: 'r', taskCount: 2 });
    const X = 'https://example.com/x';
    const Y = 'https://example.com/y';
    store.applyEvents([
      // t0 first answers X (T0+1); t1 answers Y (T0+2); a later response of t0 (its job
      // redelivered) answers Y at T0+3, replacing t0's rows.
      resultsEvent('r', 't0', [webItem(1, { url: X })], { fetchedAt: T0 + 1 }),
      resultsEvent('r', 't1', [webItem(2, { url: Y })], { fetchedAt: T0 + 2 }),
      resultsEvent('r', 't0', [webItem(3, { url: Y })], { fetchedAt: T0 + 3 }),
    ]);
    const csv = await exportText(store, {
      uniqueUrls: true,
      fields: ['task_key', 'url', 'fetched_at', 'first_seen_at'],
    });
    // Y was first seen in t1's response (T0+2, as first_seen_at says); t0 only had it at T0+3.
    expect(csv).toBe(
      'task_key,url,fetched_at,first_seen_at\r\n' +
        `t1,${Y},${new Date(T0 + 2).toISOString()},${new Date(T0 + 2).toISOString()}\r\n`,
    );
  });
  it('--unique-urls keeps the task that saw a URL first when its later answer reorders it', async () => {
    const store = stores.open({ now: () => T0 });
    seedRun(store, { runId: 'r', taskCount: 2 });
    const X = 'https://example.com/x';
    const Y = 'https://example.com/y';
    store.applyEvents([
      // t0 answers X, Y (T0+1); t1 answers Y (T0+2); t0 again (T0+3) answers Y, X.
      resultsEvent('r', 't0', [webItem(1, { url: X }), webItem(2, { url: Y })], {
        fetchedAt: T0 + 1,
      }),
      resultsEvent('r', 't1', [webItem(3, { url: Y })], { fetchedAt: T0 + 2 }),
      resultsEvent('r', 't0', [webItem(4, { url: Y }), webItem(5, { url: X })], {
        fetchedAt: T0 + 3,
      }),
    ]);
    const csv = await exportText(store, { uniqueUrls: true, fields: ['task_key', 'url'] });
    // t0 saw Y at T0+1, and still has it, before t1 saw it at T0+2.
    expect(csv).toBe(`task_key,url\r\nt0,${Y}\r\nt0,${X}\r\n`);
  });
});

describe('unknown costs are not shown as zero', () => {
  const stores = useTempStores();

  it('a retry whose cost is unknown (LOST) is not shown as "0 cr" in the retries column', () => {
    const store = stores.open({ now: () => T0 });
    seedRun(store, { runId: 'run-a', taskCount: 1 });
    store.applyEvents([
      callEvent('run-a', 't0', { startedAt: T0, creditsUsed: 2, outcome: 'ok' }),
      // The retry's worker died mid-call: its cost is unknown.
      callEvent('run-a', 't0', {
        startedAt: T0 + 1,
        attempt: 2,
        outcome: 'LOST',
        status: null,
        creditsUsed: null,
      }),
    ]);
    const report = buildCostReport(store, { by: 'pipeline', nowMs: T0 });
    const table = renderTable(report);
    // README: a call whose cost is unknown is "counted apart and shown as unknown, never as zero".
    expect(table).not.toMatch(/\b1 \(0 cr\)/);
    expect(table).toContain('1 (0 cr +1 unknown)');
    expect(report.totals).toMatchObject({ retryCalls: 1, retryUnknownCalls: 1 });
  });

  it('harvest media: a re-issue call of unknown cost is not reported as 0 credits', () => {
    const store = stores.open({ now: () => T0 });
    seedRun(store, { runId: 'run-a', taskCount: 1 });
    store.applyEvents([
      callEvent('run-a', 't0', {
        startedAt: T0,
        purpose: 'media-reissue',
        outcome: 'LOST',
        status: null,
        creditsUsed: null,
      }),
    ]);
    const counts = store.mediaCounts('run-a');
    expect(counts.reissueCalls).toBe(1);
    const text = formatMediaCounts(
      { ...counts, byKind: { screenshot: { pending: 0, saved: 1, failed: 0, expired: 0 } } },
      'run-a',
      '/data',
    );
    expect(text).toContain('with 1 calls, 0 credits +1 unknown');
    expect(counts.reissueUnknownCalls).toBe(1);
  });
});
