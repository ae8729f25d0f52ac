/**
 * `results`: the items of the latest successful response of each task, one row per source and
 * position. The common fields get their own columns; scraped content is stored once in
 * `contents` (./contents.ts) and referenced by `*_hash` columns; `item_json` keeps the rest of
 * the item. A row read back carries the item as sent.
 */
import type { Database, Statement } from 'better-sqlite3';
import { HarvestError } from '../errors.ts';
import type { ResultSource, ResultsEvent } from '../events/store.ts';
import { contentHash, type StoredHashes } from './changes/content-hash.ts';
import {
  CONTENT_COLUMNS,
  CONTENT_KINDS,
  type ContentKind,
  type ContentTexts,
  type ContentWriter,
  contentSql,
  createContentWriter,
  restoreItemJson,
  splitItem,
  splitItemTexts,
} from './contents.ts';

export interface ResultRow {
  runId: string;
  taskKey: string;
  source: ResultSource;
  position: number;
  url: string | null;
  title: string | null;
  /** `description` of a web item, `snippet` of a news item. */
  description: string | null;
  category: string | null;
  markdown: string | null;
  html: string | null;
  rawHtml: string | null;
  linksJson: string | null;
  screenshotUrl: string | null;
  audioUrl: string | null;
  videoUrl: string | null;
  metadataJson: string | null;
  /** The whole item as the API sent it, as JSON. */
  itemJson: string;
  /** The API's search job id. */
  searchId: string | null;
  callId: string;
  /** When this task, source and position first had a result, ms since the epoch. */
  firstSeenAt: number;
  /** When the response holding this row arrived, ms since the epoch. */
  fetchedAt: number;
}

export interface ResultFilter {
  runId?: string;
  /** All runs of the pipeline with this name (ignored when `runId` is given). */
  pipelineName?: string;
  /** Only rows whose URL the run's pipeline saw for the first time in this run; needs `runId`. */
  onlyNew?: boolean;
}

export interface ResultsApplied {
  /** Rows inserted or replaced. */
  written: number;
  /** True when a newer response of the task was stored already, so nothing was written. */
  stale: boolean;
}

export interface ResultsTable {
  /**
   * Stores a response as the task's result set: rows are upserted by (run, task, source,
   * position) keeping `firstSeenAt`, and rows of older responses of the task are removed. An
   * event older than what is stored is ignored. `seenIds`: the seen_urls row of each item's URL
   * (by item index; none without a URL or a known pipeline).
   */
  applyEvent(event: ResultsEvent, seenIds?: ReadonlyArray<number | undefined>): ResultsApplied;
  count(runId: string): number;
  forTask(runId: string, taskKey: string): ResultRow[];
  /**
   * Streams rows in (run, task, source, position) order with `Statement.iterate()`. Do not run
   * other statements on the same store while iterating (open a second, read-only store).
   */
  iterate(filter?: ResultFilter): IterableIterator<ResultRow>;
  /** A run's rows as the change classification reads them: no content, only its hash. */
  changeRows(runId: string): ChangeRow[];
}

/** A result as `changeRows` gives it. */
export interface ChangeRow {
  taskKey: string;
  source: ResultSource;
  position: number;
  url: string | null;
  /** The content hash (./changes/content-hash.ts), computed when the row was written. */
  changeHash: string;
}

/** The alias of each content kind's row of `contents`, joined to the result `r`. */
const CONTENT_ALIAS: Record<ContentKind, string> = {
  markdown: 'c_md',
  html: 'c_html',
  rawHtml: 'c_raw',
  links: 'c_links',
  metadata: 'c_meta',
  extra: 'c_extra',
};

const COLUMNS = `r.run_id AS runId, r.task_key AS taskKey, r.source, r.position, r.url, r.title,
  r.description, r.category, r.screenshot_url AS screenshotUrl, r.audio_url AS audioUrl,
  r.video_url AS videoUrl, r.item_json AS itemJson, r.search_id AS searchId,
  r.call_id AS callId, r.first_seen_at AS firstSeenAt, r.fetched_at AS fetchedAt,
  ${CONTENT_KINDS.map((kind) => `${contentSql(CONTENT_ALIAS[kind])} AS "content_${kind}"`).join(',\n  ')}`;
const CONTENT_JOINS = CONTENT_KINDS.map((kind) => {
  const alias = CONTENT_ALIAS[kind];
  return `LEFT JOIN contents ${alias} ON ${alias}.hash = r.${CONTENT_COLUMNS[kind]}`;
}).join('\n');
const ORDER = 'ORDER BY r.run_id, r.task_key, r.source, r.position';

/** A row as read: the columns, and the text of each content kind. */
type StoredRow = Omit<ResultRow, 'markdown' | 'html' | 'rawHtml' | 'linksJson' | 'metadataJson'> &
  Record<`content_${ContentKind}`, string | null>;

/** The row with its content and its item as the API sent it. */
function toResultRow(stored: StoredRow): ResultRow {
  const texts: ContentTexts = {};
  const row: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(stored)) {
    if (!key.startsWith('content_')) row[key] = value;
    else if (value !== null) texts[key.slice('content_'.length) as ContentKind] = value as string;
  }
  const itemJson = restoreItemJson(stored.itemJson, texts);
  const inline = inlineTexts(itemJson, texts);
  return {
    ...(row as Omit<ResultRow, 'markdown'>),
    markdown: texts.markdown ?? inline.markdown ?? null,
    html: texts.html ?? inline.html ?? null,
    rawHtml: texts.rawHtml ?? inline.rawHtml ?? null,
    linksJson: texts.links ?? inline.links ?? null,
    metadataJson: texts.metadata ?? inline.metadata ?? null,
    itemJson,
  };
}

const ROW_KINDS = ['markdown', 'html', 'rawHtml', 'links', 'metadata'] as const;

/** The short values a row keeps in its item (not in `contents`), as `splitItem` reads them. */
function inlineTexts(itemJson: string, stored: ContentTexts): ContentTexts {
  const missing = ROW_KINDS.filter((k) => stored[k] === undefined && itemJson.includes(`"${k}":`));
  if (missing.length === 0) return {};
  return splitItemTexts(JSON.parse(itemJson) as Record<string, unknown>, missing);
}

function* toResultRows(rows: IterableIterator<StoredRow>): IterableIterator<ResultRow> {
  for (const row of rows) yield toResultRow(row);
}

const HASH_COLUMNS = Object.values(CONTENT_COLUMNS);

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/**
 * Maps an API item (web, news or images) to the result columns, its content stored (once) by
 * `contents` and referenced by hash.
 */
export function resultColumns(
  item: Record<string, unknown>,
  contents: ContentWriter,
): Record<string, string | number | Buffer | null> {
  const { itemJson, texts } = splitItem(item);
  const row: Record<string, string | number | Buffer | null> = {
    url: str(item.url),
    title: str(item.title),
    description: str(item.description) ?? str(item.snippet),
    category: str(item.category),
    screenshotUrl: str(item.screenshot),
    audioUrl: str(item.audio),
    videoUrl: str(item.video),
    itemJson,
  };
  const stored: StoredHashes = {};
  for (const kind of CONTENT_KINDS) {
    const text = texts[kind];
    const hash = text === undefined ? null : contents.put(text);
    row[CONTENT_COLUMNS[kind]] = hash;
    if (hash !== null && HASHED_BY_CONTENT.has(kind)) stored[kind] = hash;
  }
  row.changeHash = contentHash(item, stored);
  return row;
}

/** Content kinds whose stored hash stands for their text in a result's change hash. */
const HASHED_BY_CONTENT: ReadonlySet<ContentKind> = new Set([
  'markdown',
  'html',
  'rawHtml',
  'links',
]);

/** The statements of the results table, prepared once per connection. */
function prepareResultStatements(db: Database) {
  return {
    // The latest response stored for the task: recorded on the task (an empty one leaves no
    // rows), or, for tasks stored before that was kept (and results of no known task), its rows'
    // time, read only then.
    latest: db
      .prepare<{ runId: string; taskKey: string }, number | null>(
        `SELECT COALESCE(
           (SELECT results_fetched_at FROM tasks WHERE run_id = @runId AND task_key = @taskKey),
           (SELECT MAX(fetched_at) FROM results WHERE run_id = @runId AND task_key = @taskKey))`,
      )
      .pluck(),
    noteLatest: db.prepare<{ runId: string; taskKey: string; fetchedAt: number }>(
      `UPDATE tasks SET results_fetched_at = MAX(IFNULL(results_fetched_at, 0), @fetchedAt)
       WHERE run_id = @runId AND task_key = @taskKey`,
    ),
    upsert: db.prepare<Record<string, string | number | Buffer | null>>(
      `INSERT INTO results (run_id, task_key, source, position, url, title, description, category,
         screenshot_url, audio_url, video_url, item_json, search_id, call_id, first_seen_at,
         fetched_at, seen_id, change_hash, ${HASH_COLUMNS.join(', ')})
       VALUES (@runId, @taskKey, @source, @position, @url, @title, @description, @category,
         @screenshotUrl, @audioUrl, @videoUrl, @itemJson, @searchId, @callId, @firstSeenAt,
         @fetchedAt, @seenId, @changeHash, ${HASH_COLUMNS.map((c) => `@${c}`).join(', ')})
       ON CONFLICT (run_id, task_key, source, position) DO UPDATE SET
         url = excluded.url, title = excluded.title, description = excluded.description,
         category = excluded.category, screenshot_url = excluded.screenshot_url,
         audio_url = excluded.audio_url, video_url = excluded.video_url,
         item_json = excluded.item_json, search_id = excluded.search_id, call_id = excluded.call_id,
         first_seen_at = excluded.first_seen_at,
         fetched_at = excluded.fetched_at,
         seen_id = excluded.seen_id, change_hash = excluded.change_hash,
         ${HASH_COLUMNS.map((c) => `${c} = excluded.${c}`).join(', ')}`,
    ),
    // When the task first answered each URL it holds (a later answer may move a URL to another
    // position, or put another URL where it was).
    seenInTask: db.prepare<[string, string], { url: string; at: number }>(
      `SELECT url, MIN(first_seen_at) AS at FROM results
       WHERE run_id = ? AND task_key = ? AND url IS NOT NULL GROUP BY url`,
    ),
    dropOlder: db.prepare<[string, string, number]>(
      'DELETE FROM results WHERE run_id = ? AND task_key = ? AND fetched_at < ?',
    ),
    count: db.prepare<[string], number>('SELECT COUNT(*) FROM results WHERE run_id = ?').pluck(),
    changeRows: db.prepare<[string], ChangeRow>(
      `SELECT task_key AS taskKey, source, position, url, change_hash AS changeHash
       FROM results WHERE run_id = ? ORDER BY task_key, source, position`,
    ),
    ofTask: db.prepare<[string, string], StoredRow>(
      `SELECT ${COLUMNS} FROM results r ${CONTENT_JOINS}
       WHERE r.run_id = ? AND r.task_key = ? ${ORDER}`,
    ),
    all: db.prepare<[], StoredRow>(`SELECT ${COLUMNS} FROM results r ${CONTENT_JOINS} ${ORDER}`),
    ofRun: db.prepare<[string], StoredRow>(
      `SELECT ${COLUMNS} FROM results r ${CONTENT_JOINS} WHERE r.run_id = ? ${ORDER}`,
    ),
    newOfRun: db.prepare<[string], StoredRow>(
      `SELECT ${COLUMNS} FROM results r
         JOIN seen_urls s ON s.id = r.seen_id
         ${CONTENT_JOINS}
       WHERE r.run_id = ? AND s.first_run_id = r.run_id ${ORDER}`,
    ),
    ofPipeline: db.prepare<[string], StoredRow>(
      `SELECT ${COLUMNS} FROM results r
         JOIN runs ru ON ru.id = r.run_id
         JOIN pipelines p ON p.id = ru.pipeline_id
         ${CONTENT_JOINS}
       WHERE p.name = ? ${ORDER}`,
    ),
  };
}

type ResultStatements = ReturnType<typeof prepareResultStatements>;

/** `ResultsTable.applyEvent`. */
function applyResults(
  s: ResultStatements,
  contents: ContentWriter,
  e: ResultsEvent,
  seenIds: ReadonlyArray<number | undefined>,
): ResultsApplied {
  const task = { runId: e.runId, taskKey: e.taskKey };
  const stored = s.latest.get(task);
  if (stored != null && stored > e.fetchedAt) return { written: 0, stale: true };
  s.noteLatest.run({ ...task, fetchedAt: e.fetchedAt });
  // A row's first_seen_at: when this task first answered its URL (read only for a task
  // answered before: a first answer sees everything now).
  const before =
    stored == null
      ? undefined
      : new Map(s.seenInTask.all(e.runId, e.taskKey).map((r) => [r.url, r.at]));
  for (const [index, { source, position, item }] of e.items.entries()) {
    const earlier = typeof item.url === 'string' ? before?.get(item.url) : undefined;
    s.upsert.run({
      firstSeenAt: earlier === undefined ? e.fetchedAt : Math.min(earlier, e.fetchedAt),
      runId: e.runId,
      taskKey: e.taskKey,
      source,
      position,
      ...resultColumns(item, contents),
      searchId: e.searchId ?? null,
      callId: e.callId,
      fetchedAt: e.fetchedAt,
      seenId: seenIds[index] ?? null,
    });
  }
  s.dropOlder.run(e.runId, e.taskKey, e.fetchedAt);
  return { written: e.items.length, stale: false };
}

/** The statement a filter reads, iterated. */
function pickRows(s: ResultStatements, filter: ResultFilter): IterableIterator<ResultRow> {
  const run = (st: Statement<[string], StoredRow>, arg: string) => toResultRows(st.iterate(arg));
  if (filter.onlyNew) {
    if (filter.runId === undefined) {
      throw new HarvestError('STORE_FILTER_INVALID', 'onlyNew needs a run id');
    }
    return run(s.newOfRun, filter.runId);
  }
  if (filter.runId !== undefined) return run(s.ofRun, filter.runId);
  if (filter.pipelineName !== undefined) return run(s.ofPipeline, filter.pipelineName);
  return toResultRows(s.all.iterate());
}

export function createResultsTable(db: Database): ResultsTable {
  const s = prepareResultStatements(db);
  const contents = createContentWriter(db);
  return {
    applyEvent: (e, seenIds = []) => applyResults(s, contents, e, seenIds),
    count: (runId) => s.count.get(runId) ?? 0,
    forTask: (runId, taskKey) => s.ofTask.all(runId, taskKey).map(toResultRow),
    iterate: (filter = {}) => pickRows(s, filter),
    changeRows: (runId) => s.changeRows.all(runId),
  };
}
