import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { CostGroupRow, Store } from '../../../../src/store/index.ts';
import { callEvent, resultsEvent, seedRun, useTempStores, webItem } from '../helpers.ts';

const DAY1 = Date.UTC(2025, 0, 2, 9);
const DAY2 = Date.UTC(2025, 0, 3, 9);

function setRequest(store: Store, runId: string, taskKey: string, request: unknown): void {
  const db = new Sqlite(store.path);
  db.prepare('UPDATE tasks SET request_json = ? WHERE run_id = ? AND task_key = ?').run(
    JSON.stringify(request),
    runId,
    taskKey,
  );
  db.close();
}

/**
 * Run a (pipeline news-watch, day 1): t0 web+markdown ok 4 credits, 3 results; t1 news: a 429,
 * then ok for 2 credits (a retry), 1 result; t2: LOST (unknown cost), then ok 2 credits; plus a
 * media re-issue of t0 for 4 credits. Run b (pipeline other, day 2): t0 BAD_REQUEST (0 credits).
 */
function seed(store: Store): void {
  seedRun(store, { runId: 'a', taskCount: 3, maxCredits: 20 });
  seedRun(store, { runId: 'b', pipeline: 'other', taskCount: 1 });
  setRequest(store, 'a', 't0', {
    query: 'q0',
    sources: [{ type: 'web' }],
    scrapeOptions: { formats: [{ type: 'markdown' }] },
  });
  setRequest(store, 'a', 't1', { query: 'q1', sources: ['news', { type: 'web' }] });
  store.runEstimates.set('a', { minCredits: 0, maxCredits: 30, tasks: 3 });
  const first = callEvent('a', 't0', { startedAt: DAY1, creditsUsed: 4 });
  const retried = callEvent('a', 't1', { startedAt: DAY1 + 20, creditsUsed: 2 });
  store.applyEvents([
    first,
    resultsEvent('a', 't0', [webItem(1), webItem(2), webItem(3)], {
      fetchedAt: DAY1 + 1,
      callId: first.callId,
    }),
    callEvent('a', 't1', {
      startedAt: DAY1 + 10,
      outcome: 'RATE_LIMITED',
      status: 429,
      creditsUsed: 0,
    }),
    retried,
    resultsEvent('a', 't1', [webItem(4)], { fetchedAt: DAY1 + 21, callId: retried.callId }),
    callEvent('a', 't2', {
      startedAt: DAY1 + 30,
      outcome: 'LOST',
      status: null,
      creditsUsed: null,
    }),
    callEvent('a', 't2', { startedAt: DAY1 + 40, attempt: 2, creditsUsed: 2 }),
    callEvent('a', 't0', { startedAt: DAY1 + 50, creditsUsed: 4, purpose: 'media-reissue' }),
    callEvent('b', 't0', {
      startedAt: DAY2,
      outcome: 'BAD_REQUEST',
      status: 400,
      creditsUsed: 0,
    }),
  ]);
}

function byKey(rows: CostGroupRow[]): Record<string, Omit<CostGroupRow, 'keys'>> {
  return Object.fromEntries(rows.map(({ keys, ...rest }) => [keys.join('|'), rest]));
}

describe('cost report queries', () => {
  const stores = useTempStores();

  it('totals: credits from calls, unknown costs apart, retries and re-issues', () => {
    const store = stores.open({ now: () => DAY1 });
    seed(store);
    expect(store.costs({ by: [] })).toEqual([
      {
        keys: ['all'],
        calls: 7,
        failedCalls: 3,
        creditsUsed: 12,
        unknownCostCalls: 1,
        lostCalls: 1,
        // t1's second call, t2's second call.
        retryCalls: 2,
        retryCredits: 4,
        retryUnknownCalls: 0,
        reissueCalls: 1,
        reissueCredits: 4,
        reissueUnknownCalls: 0,
        anomalyCalls: 0,
        anomalyCredits: 0,
        results: 4,
        runs: 2,
      },
    ]);
  });

  it('groups by pipeline, run, day, source, format and outcome', () => {
    const store = stores.open({ now: () => DAY1 });
    seed(store);
    const pick = (by: Parameters<Store['costs']>[0]['by']) =>
      Object.fromEntries(
        Object.entries(byKey(store.costs({ by }))).map(([k, v]) => [
          k,
          [v.calls, v.creditsUsed, v.unknownCostCalls, v.results],
        ]),
      );
    expect(pick(['pipeline'])).toEqual({ 'news-watch': [6, 12, 1, 4], other: [1, 0, 0, 0] });
    expect(pick(['run'])).toEqual({ a: [6, 12, 1, 4], b: [1, 0, 0, 0] });
    expect(pick(['day'])).toEqual({ '2025-01-02': [6, 12, 1, 4], '2025-01-03': [1, 0, 0, 0] });
    // seedRun's requests name no sources (web by default) and no formats.
    expect(pick(['source'])).toEqual({ web: [5, 10, 1, 3], 'news+web': [2, 2, 0, 1] });
    expect(pick(['format'])).toEqual({ markdown: [2, 8, 0, 3], none: [5, 4, 1, 1] });
    expect(pick(['outcome'])).toEqual({
      ok: [4, 12, 0, 4],
      RATE_LIMITED: [1, 0, 0, 0],
      LOST: [1, 0, 1, 0],
      BAD_REQUEST: [1, 0, 0, 0],
    });
    expect(pick(['day', 'pipeline'])).toEqual({
      '2025-01-02|news-watch': [6, 12, 1, 4],
      '2025-01-03|other': [1, 0, 0, 0],
    });
  });

  it('filters by run and time; a retry is counted against the calls before the window', () => {
    const store = stores.open({ now: () => DAY1 });
    seed(store);
    expect(store.costs({ by: [], runId: 'b' })[0]).toMatchObject({ calls: 1, runs: 1 });
    const late = store.costs({ by: [], sinceMs: DAY1 + 15 })[0];
    // t1's ok call is a retry even though the 429 before it is outside the window.
    expect(late).toMatchObject({ calls: 5, retryCalls: 2, retryCredits: 4, results: 1 });
    expect(store.costs({ by: ['run'], runId: 'nope' })).toEqual([]);
  });

  it('lists runs with budget and plan estimate', () => {
    const store = stores.open({ now: () => DAY1 });
    seed(store);
    expect(store.runInfo()).toEqual([
      {
        runId: 'a',
        pipelineName: 'news-watch',
        status: 'running',
        createdAt: DAY1,
        maxCredits: 20,
        estimateMinCredits: 0,
        estimateMaxCredits: 30,
      },
      expect.objectContaining({ runId: 'b', maxCredits: null, estimateMaxCredits: null }),
    ]);
    expect(store.runInfo('b')).toHaveLength(1);
  });
});
