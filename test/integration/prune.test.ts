/**
 * `harvest prune` on databases written through the store: cost reports read the same before and
 * after (every grouping, one and two keys, a run, a day), content and media files kept rows
 * point at stay, a dry run changes nothing, and a run that is not finished is left whole.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { executePrune } from '../../src/run/prune/execute.ts';
import { planPrune } from '../../src/run/prune/plan.ts';
import type { RetentionRule } from '../../src/run/prune/select.ts';
import { COST_GROUPS, type CostQuery, openStore, type Store } from '../../src/store/index.ts';
import { FIXTURE_START, seedCostFixture } from '../helpers/cost-fixture.ts';
import { tempDir } from '../helpers/tmp.ts';
import { resultsEvent, taskEvent, webItem } from '../unit/store/helpers.ts';

const DAY_MS = 86_400_000;
let store: Store | undefined;
let dir: string | undefined;

afterEach(() => {
  store?.close();
  store = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function open(): { store: Store; dataDir: string; setNow: (ms: number) => void } {
  dir = tempDir('harvest-prune').dir;
  let now = FIXTURE_START;
  store = openStore(path.join(dir, 'harvest.db'), { now: () => now });
  return { store, dataDir: dir, setNow: (ms) => (now = ms) };
}

/** Every report the cost command can ask for: no key, each key, each pair, a run, a day on. */
function allReports(s: Store, runId: string): unknown[] {
  const queries: CostQuery[] = [{ by: [] }];
  for (const a of COST_GROUPS) {
    queries.push({ by: [a] });
    for (const b of COST_GROUPS) if (a !== b) queries.push({ by: [a, b] });
  }
  queries.push({ by: ['day'], runId }, { by: ['pipeline'], sinceMs: FIXTURE_START + DAY_MS });
  queries.push({ by: ['run'], sinceMs: Date.UTC(2026, 10, 19) });
  return queries.map((q) => ({ q, rows: s.costs(q) }));
}

/** Rows of every table, by name. */
function tableCounts(s: Store): Record<string, number> {
  const names = [...s.prune.tableRows(['pipelines'])].length > 0 ? listTables(s) : [];
  return Object.fromEntries(s.prune.tableRows(names));
}

function listTables(s: Store): string[] {
  return [...s.prune.objectBytes().keys()].filter((n) => !n.startsWith('sqlite_'));
}

function listFiles(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).sort();
}

async function prune(s: Store, dataDir: string, pipeline: string, rule: RetentionRule) {
  const plan = planPrune(s, pipeline, rule, Date.now());
  return { plan, outcome: await executePrune(s, plan, { dataDir, batchTasks: 3 }) };
}

/** Writes a media file and returns its row fields. */
function mediaFile(dataDir: string, text: string) {
  const sha256 = createHash('sha256').update(text).digest('hex');
  const rel = `media/${sha256.slice(0, 2)}/${sha256}.png`;
  fs.mkdirSync(path.join(dataDir, path.dirname(rel)), { recursive: true });
  fs.writeFileSync(path.join(dataDir, rel), text);
  return { sha256, path: rel, bytes: text.length, contentType: 'image/png' };
}

/** Three finished runs of `shots`, each one result with a saved screenshot and markdown. */
function seedMediaRuns(
  s: Store,
  dataDir: string,
  setNow: (ms: number) => void,
  unsaved: readonly number[] = [],
) {
  const files = { a: mediaFile(dataDir, 'only run 1'), b: mediaFile(dataDir, 'runs 2 and 3') };
  const perRun = [files.a, files.b, files.b];
  const pipelineId = s.pipelines.upsert({ name: 'shots', hash: 'h', yamlText: 'name: shots\n' });
  const runIds: string[] = [];
  for (const [i, file] of perRun.entries()) {
    const at = FIXTURE_START + i * DAY_MS;
    setNow(at);
    const runId = `shots-${i + 1}`;
    runIds.push(runId);
    s.runs.create({ id: runId, pipelineId, trigger: 'schedule', maxCredits: null, taskCount: 1 });
    // Sources and formats of their own, so those groupings of the cost report have keys.
    const request = { query: 'q', limit: 1, sources: ['news', 'web'] };
    const scrapeOptions = { formats: ['markdown', 'screenshot'] };
    s.tasks.insertMany(runId, [{ key: 't0', request: { ...request, scrapeOptions } }]);
    const signed = `https://media.example/${i}.png?X-Goog-Date=20261116T060000Z&X-Goog-Expires=86400&X-Goog-Signature=ab`;
    s.media.configure({
      runId,
      kinds: ['screenshot'],
      dir: 'media',
      maxBytes: 1000,
      marginMaxMs: 300_000,
    });
    // Long enough to be stored in contents (STORE_FROM_CHARS), not kept in the row.
    const page = (title: string) => `${title}\n\n${'A paragraph of the page. '.repeat(60)}`;
    const markdown = i === 0 ? page('# only in run 1') : page('# the same page in runs 2 and 3');
    const results = resultsEvent(runId, 't0', [webItem(1, { screenshot: signed, markdown })], {
      fetchedAt: at + 1000,
    });
    s.applyEvents([
      {
        type: 'call',
        callId: results.callId,
        runId,
        taskKey: 't0',
        attempt: 1,
        startedAt: at,
        durationMs: 10,
        status: 200,
        outcome: 'ok',
        searchId: null,
        creditsUsed: 3,
      },
      results,
      taskEvent(runId, 't0', 'done', at + 2000),
    ]);
    const [row] = s.media.pendingOfTask(runId, 't0');
    if (!unsaved.includes(i))
      expect(s.media.markSaved(row!.id, { ...file, sourceUrl: signed })).toBe(true);
    s.runs.finishIfDone(runId);
  }
  return { runIds, files };
}

describe('harvest prune', () => {
  it('leaves every cost report as it was, for every grouping', async () => {
    const { store: s, dataDir, setNow } = open();
    const { runIds } = seedCostFixture(s, setNow);
    const before = allReports(s, runIds[0]!);
    const news = await prune(s, dataDir, 'news-watch', { keepRuns: 2 });
    expect(news.outcome.pruned).toHaveLength(5);
    expect(news.outcome.calls).toBe(news.plan.totals.calls);
    // `harvest status` of a pruned run says what went, beside the rows left (none).
    const gone = news.plan.runs[0]!;
    const status = s.runStatus(gone.runId)!;
    expect(status.calls.calls).toBe(0);
    expect(status.pruned).toEqual({
      calls: gone.calls,
      creditsUsed: gone.creditsUsed,
      unknownCostCalls: expect.any(Number),
      results: gone.results,
    });
    const kept = runIds.find((id) => !news.plan.runs.some((r) => r.runId === id))!;
    expect(s.runStatus(kept)?.pruned).toBeNull();
    await prune(s, dataDir, 'bulk-dataset', { olderThanMs: 3 * DAY_MS });
    await prune(s, dataDir, 'weekly-research', { keepRuns: 1 });
    expect(s.prune.footprint(runIds[0]!)).toMatchObject({ calls: 0, results: 0 });
    expect(allReports(s, runIds[0]!)).toEqual(before);
    // Pruning again finds nothing more and changes nothing.
    const again = await prune(s, dataDir, 'news-watch', { keepRuns: 2 });
    expect(again.plan.runs).toHaveLength(0);
    expect(again.plan.alreadyPruned).toBe(5);
    expect(allReports(s, runIds[0]!)).toEqual(before);
  });

  it('a dry run changes nothing and says what the prune then removes', async () => {
    const { store: s, dataDir, setNow } = open();
    seedCostFixture(s, setNow, 3);
    seedMediaRuns(s, dataDir, setNow);
    const counts = tableCounts(s);
    const files = listFiles(path.join(dataDir, 'media'));
    const dry = planPrune(s, 'shots', { keepRuns: 1 }, Date.now());
    expect(tableCounts(s)).toEqual(counts);
    expect(listFiles(path.join(dataDir, 'media'))).toEqual(files);
    const real = await prune(s, dataDir, 'shots', { keepRuns: 1 });
    expect(real.plan.totals).toEqual(dry.totals);
    expect(real.outcome).toMatchObject({
      calls: dry.totals.calls,
      results: dry.totals.results,
      media: dry.totals.media,
      files: dry.totals.files,
      fileBytes: dry.totals.fileBytes,
      contents: dry.totals.contents,
    });
  });

  it('removes no media file or content a kept row points at', async () => {
    const { store: s, dataDir, setNow } = open();
    const { runIds, files } = seedMediaRuns(s, dataDir, setNow);
    const reports = allReports(s, runIds[0]!);
    expect(s.costs({ by: ['source', 'format'] })[0]?.keys).toEqual([
      'news+web',
      'markdown+screenshot',
    ]);
    const { plan, outcome } = await prune(s, dataDir, 'shots', { keepRuns: 1 });
    expect(allReports(s, runIds[0]!)).toEqual(reports);
    expect(plan.runs.map((r) => r.runId)).toEqual([runIds[1], runIds[0]]);
    expect(plan.files.map((f) => f.path)).toEqual([files.a.path]);
    expect(outcome).toMatchObject({ files: 1, fileBytes: files.a.bytes, media: 2, results: 2 });
    // The markdown only run 1 had is stored no more; the one runs 2 and 3 share stays.
    expect(outcome.contents).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(dataDir, files.a.path))).toBe(false);
    expect(fs.existsSync(path.join(dataDir, files.b.path))).toBe(true);
    const kept = [...s.iterateResults(runIds[2]!)];
    expect(kept).toHaveLength(1);
    expect(kept[0]?.markdown).toMatch(/^# the same page in runs 2 and 3\n/);
    expect(s.media.ofRun(runIds[2]!)).toHaveLength(1);
  });

  it('never prunes a run that is not finished, nor one still saving media', async () => {
    const { store: s, dataDir, setNow } = open();
    const { runIds } = seedMediaRuns(s, dataDir, setNow, [1]);
    s.runs.setStatus(runIds[0]!, 'running');
    const { plan, outcome } = await prune(s, dataDir, 'shots', { keepRuns: 1 });
    expect(plan.runs).toHaveLength(0);
    expect(plan.skipped.map((r) => r.runId).sort()).toEqual([runIds[0], runIds[1]].sort());
    expect(outcome.pruned).toEqual([]);
    expect(s.prune.footprint(runIds[0]!)).toMatchObject({ calls: 1, results: 1, media: 1 });
  });

  it('stops at a batch whose run was resumed meanwhile, changing nothing', async () => {
    const { store: s, dataDir, setNow } = open();
    const { runIds } = seedMediaRuns(s, dataDir, setNow);
    s.runs.setStatus(runIds[0]!, 'running');
    expect(s.prune.moveBatch(runIds[0]!, null, 10)).toBeUndefined();
    expect(s.prune.footprint(runIds[0]!)).toMatchObject({ calls: 1, results: 1, media: 1 });
    expect(s.costs({ by: ['run'], runId: runIds[0]! })[0]).toMatchObject({ calls: 1, results: 1 });
  });

  it('leaves freed pages in a database made before incremental vacuum', async () => {
    const first = open();
    seedCostFixture(first.store, first.setNow, 3);
    const file = first.store.path;
    first.store.close();
    const raw = new Sqlite(file);
    raw.pragma('auto_vacuum = NONE');
    raw.exec('VACUUM');
    raw.close();
    store = openStore(file);
    expect(store.prune.pages().autoVacuum).toBe(0);
    const before = store.costs({ by: ['pipeline', 'day'] });
    const { outcome } = await prune(store, first.dataDir, 'bulk-dataset', { keepRuns: 1 });
    expect(outcome.database).toMatchObject({ incremental: false, vacuumedPages: 0 });
    expect(outcome.database.freedPages).toBeGreaterThan(0);
    expect(store.costs({ by: ['pipeline', 'day'] })).toEqual(before);
  });

  it('gives freed pages back to the file system in a new database', async () => {
    const { store: s, dataDir, setNow } = open();
    seedCostFixture(s, setNow);
    expect(s.prune.pages().autoVacuum).toBe(2);
    const { outcome } = await prune(s, dataDir, 'bulk-dataset', { keepRuns: 1 });
    expect(outcome.database.incremental).toBe(true);
    expect(outcome.database.freedPages).toBeGreaterThan(0);
    expect(outcome.database.vacuumedPages).toBe(outcome.database.freedPages);
    expect(s.prune.pages().freePages).toBe(0);
    expect(outcome.database.fileBytesAfter).toBeLessThan(outcome.database.fileBytesBefore);
  });
});
