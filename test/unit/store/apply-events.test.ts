import { describe, expect, it } from 'vitest';
import {
  callEvent,
  dumpTables,
  resultsEvent,
  seedRun,
  taskEvent,
  useTempStores,
  webItem,
} from './helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

describe('applyEvents', () => {
  const stores = useTempStores();

  it('applying the same events twice gives the same rows', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    const events = [
      taskEvent(runId, 't0', 'running', T0 + 10),
      callEvent(runId, 't0', { outcome: 'RATE_LIMITED', status: 429, creditsUsed: null }),
      taskEvent(runId, 't0', 'retrying', T0 + 20, { errorCode: 'RATE_LIMITED' }),
      taskEvent(runId, 't0', 'running', T0 + 30, { attempts: 2 }),
      callEvent(runId, 't0', { attempt: 2, creditsUsed: 3 }),
      resultsEvent(runId, 't0', [webItem(1), webItem(2)]),
      taskEvent(runId, 't0', 'done', T0 + 40, { attempts: 2 }),
    ];
    const first = store.applyEvents(events);
    expect(first).toMatchObject({
      calls: 2,
      duplicateCalls: 0,
      results: 2,
      taskUpdates: 4,
      rejected: [],
      runsWithTaskChanges: [runId],
    });
    const before = dumpTables(store.path);

    const second = store.applyEvents(events);
    expect(second).toMatchObject({
      calls: 0,
      duplicateCalls: 2,
      taskUpdates: 0,
      ignoredTaskEvents: 4,
    });
    // A partial redelivery, in another order, changes nothing either.
    store.applyEvents([events[4], events[5], events[1]].filter((e) => e !== undefined));
    expect(dumpTables(store.path)).toEqual(before);

    expect(store.tasks.get(runId, 't0')).toMatchObject({
      status: 'done',
      attempts: 2,
      creditsUsed: 3,
      lastErrorCode: null,
    });
    expect(store.calls.summary(runId)).toEqual({
      calls: 2,
      creditsUsed: 3,
      byOutcome: { ok: 1, RATE_LIMITED: 1 },
      unknownCostCalls: 1,
    });
    expect(store.results.count(runId)).toBe(2);
  });

  it("the transaction that ends a run's last task finishes the run; delivered again, it changes nothing", () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store, { taskCount: 1 });
    const batch = [
      callEvent(runId, 't0'),
      resultsEvent(runId, 't0', [webItem(1)]),
      taskEvent(runId, 't0', 'done', T0 + 10),
    ];
    // No step after the commit is left to do: a process that dies once it returns loses nothing.
    expect(store.applyEvents(batch).runsWithTaskChanges).toEqual([runId]);
    expect(store.runs.get(runId)).toMatchObject({ status: 'completed', finishedAt: T0 });
    expect(store.applyEvents(batch).runsWithTaskChanges).toEqual([]);
    expect(store.runs.get(runId)?.status).toBe('completed');
  });

  it('task status is monotonic: done is final, failed gives way only to done', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    const status = (key: string) => store.tasks.get(runId, key)?.status;

    store.applyEvents([
      taskEvent(runId, 't0', 'done', T0 + 10),
      taskEvent(runId, 't0', 'retrying', T0 + 20, { attempts: 2 }),
      taskEvent(runId, 't0', 'running', T0 + 30, { attempts: 3 }),
      taskEvent(runId, 't0', 'failed', T0 + 40, { attempts: 3, errorCode: 'TIMEOUT' }),
    ]);
    expect(status('t0')).toBe('done');
    expect(store.tasks.get(runId, 't0')?.lastErrorCode).toBeNull();

    store.applyEvents([
      taskEvent(runId, 't1', 'failed', T0 + 10, {
        attempts: 5,
        errorCode: 'SERVER_ERROR',
        errorMessage: 'Internal error',
      }),
    ]);
    const late = store.applyEvents([
      taskEvent(runId, 't1', 'retrying', T0 + 50, { attempts: 6 }),
      taskEvent(runId, 't1', 'running', T0 + 60, { attempts: 6 }),
      taskEvent(runId, 't1', 'queued', T0 + 70),
    ]);
    expect(late.ignoredTaskEvents).toBe(3);
    expect(store.tasks.get(runId, 't1')).toMatchObject({
      status: 'failed',
      attempts: 5,
      lastErrorCode: 'SERVER_ERROR',
      lastErrorMessage: 'Internal error',
    });
    store.applyEvents([taskEvent(runId, 't1', 'done', T0 + 5, { attempts: 5 })]);
    expect(status('t1')).toBe('done');

    // Among active states the later event wins, whatever order they arrive in.
    store.applyEvents([
      taskEvent(runId, 't2', 'running', T0 + 30, { attempts: 2 }),
      taskEvent(runId, 't2', 'retrying', T0 + 20, { attempts: 1 }),
      taskEvent(runId, 't2', 'running', T0 + 10, { attempts: 1 }),
    ]);
    expect(store.tasks.get(runId, 't2')).toMatchObject({ status: 'running', attempts: 2 });
  });

  it('ignores task events for unknown tasks but still records their calls', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    const report = store.applyEvents([
      taskEvent(runId, 'nope', 'done', T0 + 1),
      callEvent('ghost-run', 'nope', { creditsUsed: 4 }),
    ]);
    expect(report).toMatchObject({ ignoredTaskEvents: 1, calls: 1, runsWithTaskChanges: [] });
    expect(store.calls.summary('ghost-run').creditsUsed).toBe(4);
  });

  it('rejects invalid events and applies the rest of the batch', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    const report = store.applyEvents([
      callEvent(runId, 't0'),
      { ...callEvent(runId, 't0'), outcome: 'EXPLODED' },
      { ...callEvent(runId, 't0'), callId: 'not-a-uuid', attempt: 0 },
      { type: 'mystery' },
    ]);
    expect(report.calls).toBe(1);
    expect(report.rejected.map((r) => r.index)).toEqual([1, 2, 3]);
    expect(report.rejected[1]?.issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^callId: /),
        expect.stringMatching(/^attempt: /),
      ]),
    );
  });

  it('a re-issued search replaces the rows and keeps first_seen; a late older one is ignored', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    const t1 = T0 + 1_000;
    const t2 = T0 + 2_000;
    const first = resultsEvent(
      runId,
      't0',
      [webItem(1, { screenshot: 'https://m/s1?old' }), webItem(2), webItem(3)],
      {
        fetchedAt: t1,
      },
    );
    const reissued = resultsEvent(
      runId,
      't0',
      [webItem(1, { screenshot: 'https://m/s1?new' }), webItem(2)],
      {
        fetchedAt: t2,
        searchId: 'search-2',
      },
    );
    store.applyEvents([first]);
    store.applyEvents([reissued]);
    const rows = store.results.forTask(runId, 't0');
    expect(
      rows.map((r) => [r.position, r.screenshotUrl, r.firstSeenAt, r.fetchedAt, r.searchId]),
    ).toEqual([
      [0, 'https://m/s1?new', t1, t2, 'search-2'],
      [1, null, t1, t2, 'search-2'],
    ]);
    expect(rows.every((r) => r.callId === reissued.callId)).toBe(true);

    const late = store.applyEvents([first]);
    expect(late).toMatchObject({ results: 0, staleResults: 1 });
    expect(store.results.forTask(runId, 't0')).toEqual(rows);
  });

  it('an older response arriving after a newer one with no items is ignored too', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    store.applyEvents([resultsEvent(runId, 't0', [], { fetchedAt: T0 + 2_000 })]);
    const late = store.applyEvents([
      resultsEvent(runId, 't0', [webItem(1, { audio: 'https://m/a1.mp3' }), webItem(2)], {
        fetchedAt: T0 + 1_000,
      }),
    ]);
    expect(late).toMatchObject({ results: 0, staleResults: 1, mediaRequested: 0 });
    expect(store.results.count(runId)).toBe(0);
  });

  it('maps web, news and image items to columns and keeps the raw item', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    const web = webItem(1, {
      category: 'github',
      markdown: '# md',
      html: '<p>h</p>',
      rawHtml: '<html>',
      links: ['https://a', 'https://b'],
      audio: 'https://m/a.mp3',
      video: 'https://m/v.mp4',
      metadata: { statusCode: 200, sourceURL: 'https://example.com/page-1' },
      answer: 'forty-two',
    });
    const news = {
      title: 'N',
      snippet: 'S',
      url: 'https://news/1',
      date: '1 day ago',
      position: 1,
    };
    const image = {
      title: 'I',
      imageUrl: 'https://img/1.png',
      imageWidth: 10,
      imageHeight: 20,
      url: 'https://pics/1',
      position: 1,
    };
    store.applyEvents([
      {
        ...resultsEvent(runId, 't0', []),
        items: [
          { source: 'web', position: 0, item: web },
          { source: 'news', position: 0, item: news },
          { source: 'images', position: 0, item: image },
        ],
      },
    ]);
    const [imageRow, newsRow, webRow] = store.results.forTask(runId, 't0');
    expect(webRow).toMatchObject({
      source: 'web',
      url: 'https://example.com/page-1',
      category: 'github',
      markdown: '# md',
      html: '<p>h</p>',
      rawHtml: '<html>',
      audioUrl: 'https://m/a.mp3',
      videoUrl: 'https://m/v.mp4',
      screenshotUrl: null,
    });
    expect(JSON.parse(webRow?.linksJson ?? 'null')).toEqual(['https://a', 'https://b']);
    expect(JSON.parse(webRow?.metadataJson ?? 'null')).toEqual(web.metadata);
    expect(JSON.parse(webRow?.itemJson ?? 'null')).toEqual(web);
    expect(newsRow).toMatchObject({ source: 'news', description: 'S', url: 'https://news/1' });
    expect(imageRow).toMatchObject({ source: 'images', url: 'https://pics/1', description: null });
    expect(JSON.parse(imageRow?.itemJson ?? 'null')).toEqual(image);
  });

  it('keeps first and last seen per pipeline and URL, across runs and out of order', () => {
    const store = stores.open({ now: () => T0 });
    const a = seedRun(store, { runId: 'run-a' });
    const b = seedRun(store, { runId: 'run-b' });
    const other = seedRun(store, { runId: 'run-other', pipeline: 'other' });
    const url = 'https://example.com/page-1';

    store.applyEvents([resultsEvent(b.runId, 't0', [webItem(1)], { fetchedAt: T0 + 2_000 })]);
    store.applyEvents([
      resultsEvent(a.runId, 't0', [webItem(1), webItem(2)], { fetchedAt: T0 + 1_000 }),
    ]);
    store.applyEvents([resultsEvent(other.runId, 't0', [webItem(1)], { fetchedAt: T0 + 5_000 })]);
    store.applyEvents([resultsEvent(a.runId, 't0', [webItem(1)], { fetchedAt: T0 + 1_000 })]);

    expect(store.seenUrls.get('news-watch', url)).toEqual({
      pipelineName: 'news-watch',
      url,
      firstSeenAt: T0 + 1_000,
      lastSeenAt: T0 + 2_000,
      firstRunId: 'run-a',
      lastRunId: 'run-b',
    });
    expect(store.seenUrls.get('other', url)).toMatchObject({
      firstSeenAt: T0 + 5_000,
      firstRunId: 'run-other',
    });
    expect(store.seenUrls.countFirstSeenIn('run-a')).toBe(2);
    expect(store.seenUrls.countFirstSeenIn('run-b')).toBe(0);

    store.applyEvents([
      resultsEvent(b.runId, 't1', [webItem(3), webItem(1)], { fetchedAt: T0 + 3_000 }),
    ]);
    const fresh = [...store.iterateResults({ runId: 'run-b', onlyNew: true })];
    expect(fresh.map((r) => r.url)).toEqual(['https://example.com/page-3']);
    expect([...store.iterateResults('run-b')]).toHaveLength(3);
    expect([...store.iterateResults({ pipelineName: 'news-watch' })]).toHaveLength(5);
    expect([...store.iterateResults()]).toHaveLength(6);
  });

  it('adds call credits to the task once', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    const calls = [
      callEvent(runId, 't0', { creditsUsed: 5 }),
      callEvent(runId, 't0', { creditsUsed: null, outcome: 'NETWORK', status: null }),
      callEvent(runId, 't0', { creditsUsed: 0, outcome: 'BAD_REQUEST', status: 400 }),
    ];
    store.applyEvents(calls);
    store.applyEvents(calls);
    expect(store.tasks.get(runId, 't0')?.creditsUsed).toBe(5);
  });

  it("replaces a LOST record with the call's real record, whichever arrives first", () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    const real = callEvent(runId, 't0', { creditsUsed: 4, durationMs: 900 });
    const lost = callEvent(runId, 't0', {
      callId: real.callId,
      outcome: 'LOST',
      status: null,
      creditsUsed: null,
      errorMessage: 'the worker stopped before the answer was recorded; the cost is unknown',
      searchId: null,
    });
    const other = callEvent(runId, 't1', { creditsUsed: 2 });

    // A pool reaped the call of a slow worker, whose real record arrives afterwards.
    expect(store.applyEvents([lost, other])).toMatchObject({ calls: 2 });
    expect(store.calls.totals(runId)).toEqual({ calls: 2, creditsUsed: 2, unknownCostCalls: 1 });
    expect(store.applyEvents([real])).toMatchObject({ calls: 1, duplicateCalls: 0 });
    const expected = { calls: 2, creditsUsed: 6, unknownCostCalls: 0 };
    expect(store.calls.totals(runId)).toEqual(expected);
    expect(store.calls.summary(runId)).toEqual({ ...expected, byOutcome: { ok: 2 } });
    expect(store.tasks.get(runId, 't0')?.creditsUsed).toBe(4);

    // Redelivered, either record changes nothing: the real one stays.
    expect(store.applyEvents([lost, real])).toMatchObject({ calls: 0, duplicateCalls: 2 });
    expect(store.calls.totals(runId)).toEqual(expected);
    expect(store.tasks.get(runId, 't0')?.creditsUsed).toBe(4);
  });
});
