import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import {
  buildExportQuery,
  CALL_COLUMNS,
  type ExportColumn,
  type ExportFilter,
  RESULT_COLUMNS,
  type Store,
  TASK_COLUMNS,
} from '../../../../src/store/index.ts';
import { callEvent, resultsEvent, seedRun, taskEvent, useTempStores, webItem } from '../helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

function rows(
  store: Store,
  columns: readonly ExportColumn[],
  filter: ExportFilter,
): Record<string, unknown>[] {
  const query = buildExportQuery(columns, filter);
  return [...store.exports.iterate(query)].map((row) =>
    Object.fromEntries(columns.map((c, i) => [c.name, row[i]])),
  );
}

function pick(names: string[], set = RESULT_COLUMNS): ExportColumn[] {
  return names.map((n) => {
    const c = set.find((x) => x.name === n);
    if (!c) throw new Error(n);
    return c;
  });
}

/** A media row as the media worker writes it (nothing in harvest fills the table yet). */
function insertMedia(
  store: Store,
  m: {
    runId: string;
    taskKey: string;
    position: number;
    kind: string;
    item?: number;
    status?: string;
  },
): void {
  const db = new Sqlite(store.path);
  try {
    db.prepare(
      `INSERT INTO media (run_id, task_key, source, position, kind, item_index, status, source_url,
         issued_at, deadline_at, sha256, path, bytes, content_type, saved_at, updated_at)
       VALUES (?, ?, 'web', ?, ?, ?, ?, 'https://signed/x', 1, 2, ?, ?, 10, 'image/png', 3, 3)`,
    ).run(
      m.runId,
      m.taskKey,
      m.position,
      m.kind,
      m.item ?? 0,
      m.status ?? 'saved',
      `sha-${m.kind}-${m.item ?? 0}`,
      `media/${m.kind}-${m.item ?? 0}.bin`,
    );
  } finally {
    db.close();
  }
}

describe('export queries', () => {
  const stores = useTempStores();

  it('reads every documented result column, typed, with news, image, format and metadata fields', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store, { taskCount: 1 });
    // The task asked for summary and json formats, so their outputs are read.
    const db = new Sqlite(store.path);
    db.prepare('UPDATE tasks SET request_json = ? WHERE run_id = ?').run(
      JSON.stringify({
        query: 'q t0',
        sources: ['web', 'news', 'images'],
        scrapeOptions: { formats: ['markdown', 'summary', { type: 'json', prompt: 'p' }] },
      }),
      runId,
    );
    db.close();
    const web = {
      ...webItem(1),
      category: 'research',
      markdown: '# md',
      links: ['https://a', 'https://b'],
      summary: 'short',
      json: { price: 3 },
      screenshot: 'https://signed/shot.png',
      metadata: {
        title: ['First', 'Second'],
        sourceURL: 'https://example.com/page-1',
        url: 'https://example.com/final',
        statusCode: 200,
        language: 'en',
        numPages: 3,
      },
    };
    const news = {
      title: 'N',
      snippet: 'S',
      url: 'https://news/1',
      date: '2 days ago',
      imageUrl: 'https://img/n.png',
    };
    const image = {
      title: 'I',
      imageUrl: 'https://img/1.png',
      imageWidth: 10,
      imageHeight: 20,
      url: 'https://pics/1',
    };
    store.applyEvents([
      {
        ...resultsEvent(runId, 't0', [], { fetchedAt: T0 + 5 }),
        items: [
          { source: 'web', position: 0, item: web },
          { source: 'news', position: 0, item: news },
          { source: 'images', position: 0, item: image },
        ],
      },
    ]);
    const out = rows(store, RESULT_COLUMNS, { kind: 'results' });
    expect(out.map((r) => r.source)).toEqual(['images', 'news', 'web']);
    const [img, nws, w] = out;
    expect(w).toMatchObject({
      run_id: runId,
      pipeline: 'news-watch',
      task_key: 't0',
      query: 'q t0',
      position: 0,
      url: 'https://example.com/page-1',
      title: 'Page 1',
      description: 'About page 1',
      category: 'research',
      date: null,
      image_url: null,
      markdown: '# md',
      links: '["https://a","https://b"]',
      summary: 'short',
      answer: null,
      highlights: null,
      json: '{"price":3}',
      screenshot_url: 'https://signed/shot.png',
      status_code: 200,
      source_url: 'https://example.com/page-1',
      final_url: 'https://example.com/final',
      page_title: 'First',
      language: 'en',
      num_pages: 3,
      scrape_error: null,
      screenshot_file: null,
      action_files: null,
      search_id: 'search-1',
      fetched_at: T0 + 5,
      first_seen_at: T0 + 5,
      first_seen_run: runId,
      last_seen_at: T0 + 5,
    });
    expect(JSON.parse(String(w?.metadata))).toEqual(web.metadata);
    expect(nws).toMatchObject({
      description: 'S',
      date: '2 days ago',
      image_url: 'https://img/n.png',
    });
    expect(img).toMatchObject({
      image_url: 'https://img/1.png',
      image_width: 10,
      image_height: 20,
    });
    expect(Object.keys(w ?? {})).toEqual(RESULT_COLUMNS.map((c) => c.name));
  });

  it('fills the media columns from saved media rows only', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store, { taskCount: 1 });
    store.applyEvents([resultsEvent(runId, 't0', [webItem(1), webItem(2)])]);
    insertMedia(store, { runId, taskKey: 't0', position: 0, kind: 'screenshot' });
    insertMedia(store, { runId, taskKey: 't0', position: 0, kind: 'video', status: 'expired' });
    insertMedia(store, { runId, taskKey: 't0', position: 0, kind: 'action-pdf', item: 1 });
    insertMedia(store, { runId, taskKey: 't0', position: 0, kind: 'action-screenshot', item: 0 });
    insertMedia(store, { runId, taskKey: 't0', position: 1, kind: 'audio' });
    const media = pick([
      'position',
      'screenshot_file',
      'screenshot_sha256',
      'audio_file',
      'video_file',
      'action_files',
    ]);
    const [first, second] = rows(store, media, { kind: 'results' });
    expect(first).toMatchObject({
      screenshot_file: 'media/screenshot-0.bin',
      screenshot_sha256: 'sha-screenshot-0',
      audio_file: null,
      video_file: null,
    });
    expect(JSON.parse(String(first?.action_files))).toEqual([
      { kind: 'action-pdf', index: 1, file: 'media/action-pdf-1.bin', sha256: 'sha-action-pdf-1' },
      {
        kind: 'action-screenshot',
        index: 0,
        file: 'media/action-screenshot-0.bin',
        sha256: 'sha-action-screenshot-0',
      },
    ]);
    expect(second).toMatchObject({
      screenshot_file: null,
      audio_file: 'media/audio-0.bin',
      action_files: null,
    });
  });

  it('filters by run, pipeline, time and source', () => {
    let now = T0;
    const store = stores.open({ now: () => now });
    const a = seedRun(store, { runId: 'run-a', taskCount: 2 });
    now = T0 + 10;
    const b = seedRun(store, { runId: 'run-b', pipeline: 'other', taskCount: 1 });
    store.applyEvents([
      resultsEvent(a.runId, 't0', [webItem(1), webItem(2)], { fetchedAt: T0 + 100 }),
      {
        ...resultsEvent(a.runId, 't1', [], { fetchedAt: T0 + 200 }),
        items: [{ source: 'news', position: 0, item: { url: 'https://news/9', title: 'n' } }],
      },
      resultsEvent(b.runId, 't0', [webItem(3)], { fetchedAt: T0 + 300 }),
    ]);
    const urls = (filter: Omit<ExportFilter, 'kind'>) =>
      rows(store, pick(['url']), { kind: 'results', ...filter }).map((r) => r.url);
    expect(urls({})).toHaveLength(4);
    expect(urls({ runId: 'run-b' })).toEqual(['https://example.com/page-3']);
    expect(urls({ pipelineName: 'news-watch' })).toEqual([
      'https://example.com/page-1',
      'https://example.com/page-2',
      'https://news/9',
    ]);
    expect(urls({ sinceMs: T0 + 200 })).toEqual(['https://news/9', 'https://example.com/page-3']);
    expect(urls({ source: 'news' })).toEqual(['https://news/9']);
    expect(urls({ pipelineName: 'nobody' })).toEqual([]);
  });

  it('only new: URLs the pipeline first saw in the given run or later; unique URLs keep the first seen', () => {
    let now = T0;
    const store = stores.open({ now: () => now });
    const r1 = seedRun(store, { runId: 'r1', taskCount: 2 });
    now = T0 + 1000;
    const r2 = seedRun(store, { runId: 'r2', taskCount: 2 });
    now = T0 + 2000;
    const r3 = seedRun(store, { runId: 'r3', taskCount: 1 });
    store.applyEvents([
      resultsEvent(r1.runId, 't0', [webItem(1), webItem(2)], { fetchedAt: T0 + 100 }),
      resultsEvent(r1.runId, 't1', [webItem(2)], { fetchedAt: T0 + 150 }),
      resultsEvent(r2.runId, 't0', [webItem(2), webItem(3)], { fetchedAt: T0 + 1100 }),
      resultsEvent(r2.runId, 't1', [webItem(3), webItem(4)], { fetchedAt: T0 + 1200 }),
      resultsEvent(r3.runId, 't0', [webItem(4), webItem(5)], { fetchedAt: T0 + 2100 }),
    ]);
    const since = (id: string) => {
      const run = store.runs.get(id)!;
      return { id, createdAt: run.createdAt, pipelineName: run.pipelineName };
    };
    const cols = pick(['run_id', 'task_key', 'url']);
    const short = (r: Record<string, unknown>) =>
      `${r.run_id}/${r.task_key}/${String(r.url).replace('https://example.com/page-', '')}`;
    // New in r2 (and r2 only): page-3 twice (two tasks), page-4.
    expect(
      rows(store, cols, { kind: 'results', runId: 'r2', newSince: since('r2') }).map(short),
    ).toEqual(['r2/t0/3', 'r2/t1/3', 'r2/t1/4']);
    // From r2 on, every run: r3's page-4 too (first seen in r2, not before it) and page-5.
    expect(rows(store, cols, { kind: 'results', newSince: since('r2') }).map(short)).toEqual([
      'r2/t0/3',
      'r2/t1/3',
      'r2/t1/4',
      'r3/t0/4',
      'r3/t0/5',
    ]);
    expect(
      rows(store, cols, { kind: 'results', newSince: since('r2'), uniqueUrls: true }).map(short),
    ).toEqual(['r2/t0/3', 'r2/t1/4', 'r3/t0/5']);
    // Unique across every run: the first sighting of each URL.
    expect(rows(store, cols, { kind: 'results', uniqueUrls: true }).map(short)).toEqual([
      'r1/t0/1',
      'r1/t0/2',
      'r2/t0/3',
      'r2/t1/4',
      'r3/t0/5',
    ]);
    expect(rows(store, cols, { kind: 'results', newSince: since('r3') }).map(short)).toEqual([
      'r3/t0/5',
    ]);
  });

  it('exports calls (LOST cost stays null) and tasks with their own columns', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store, { taskCount: 2 });
    store.applyEvents([
      taskEvent(runId, 't0', 'running', T0 + 1),
      callEvent(runId, 't0', { startedAt: T0 + 1, creditsUsed: 4 }),
      callEvent(runId, 't1', {
        startedAt: T0 + 2,
        outcome: 'LOST',
        status: null,
        creditsUsed: null,
        purpose: 'media-reissue',
      }),
      resultsEvent(runId, 't0', [webItem(1), webItem(2)]),
      taskEvent(runId, 't0', 'done', T0 + 3),
    ]);
    const calls = rows(store, CALL_COLUMNS, { kind: 'calls', runId });
    expect(calls.map((c) => [c.task_key, c.outcome, c.credits_used, c.purpose])).toEqual([
      ['t0', 'ok', 4, 'search'],
      ['t1', 'LOST', null, 'media-reissue'],
    ]);
    expect(calls[0]).toMatchObject({
      pipeline: 'news-watch',
      attempt: 1,
      duration_ms: 120,
      status: 200,
    });
    const tasks = rows(store, TASK_COLUMNS, { kind: 'tasks', runId });
    expect(tasks.map((t) => [t.task_key, t.status, t.credits_used, t.results, t.query])).toEqual([
      ['t0', 'done', 4, 2, 'q t0'],
      ['t1', 'queued', 0, 0, 'q t1'],
    ]);
    expect(JSON.parse(String(tasks[0]?.request))).toEqual({ query: 'q t0', limit: 2 });
    expect(rows(store, TASK_COLUMNS, { kind: 'tasks', sinceMs: T0 + 1 })).toEqual([]);
    expect(store.exports.count(buildExportQuery(CALL_COLUMNS, { kind: 'calls' }))).toBe(2);
  });
});
