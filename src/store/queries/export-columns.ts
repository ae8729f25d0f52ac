/**
 * The documented column sets of `harvest export` (results, calls, tasks): one list per kind of
 * row, the same for every format. Each column names its type, the SQL expression that reads it
 * and the joins that expression needs, so an export of a few `--fields` reads only what they
 * need. Pure data (no database handle), so `harvest export --help` can list it cheaply.
 *
 * Types, and how each format writes them (docs/export.md):
 * - `string`: text; null when absent.
 * - `integer`: a whole number; null when absent.
 * - `timestamp`: ms since the epoch in SQLite; ISO 8601 UTC text in JSONL and CSV, a UTC
 *   TIMESTAMP(MILLIS) in Parquet.
 * - `json`: JSON text in SQLite; a nested value in JSONL, JSON text in CSV and in Parquet
 *   (a string column with the JSON logical type).
 */

import { type ContentKind, contentSql } from '../contents.ts';

export const EXPORT_KINDS = ['results', 'calls', 'tasks', 'changes'] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

export type ColumnType = 'string' | 'integer' | 'timestamp' | 'json';

/**
 * Tables a column's expression reads besides its kind's own table (`media` also marks columns
 * that read the media table in a subquery; `content:<kind>` the row of `contents` a result
 * references for that kind of content).
 */
export type ColumnJoin =
  | 'pipeline'
  | 'task'
  | 'seen'
  | 'media'
  | 'changes'
  | `content:${ContentKind}`;

export interface ExportColumn {
  name: string;
  type: ColumnType;
  /** SQL expression over the kind's aliases (results `r`, calls `c`, tasks `t`, ...). */
  sql: string;
  joins: readonly ColumnJoin[];
  /** One line for `--help` and docs/export.md. */
  doc: string;
}

/** A string at `path` of the JSON text `doc` (null when absent or not a string). */
function jsonText(doc: string, path: string): string {
  return `CASE WHEN json_type(${doc}, '${path}') = 'text' THEN json_extract(${doc}, '${path}') END`;
}

/** An integer at `path` of the JSON text `doc` (null when absent or not an integer). */
function jsonInt(doc: string, path: string): string {
  return `CASE WHEN json_type(${doc}, '${path}') = 'integer' THEN json_extract(${doc}, '${path}') END`;
}

/** The JSON text of the value at `path` (null when absent or JSON null). */
function jsonValue(doc: string, path: string): string {
  return `NULLIF(${doc} -> '${path}', 'null')`;
}

function col(
  name: string,
  type: ColumnType,
  sql: string,
  doc: string,
  joins: readonly ColumnJoin[] = [],
): ExportColumn {
  return { name, type, sql, joins, doc };
}

const ITEM = 'r.item_json';

/** The alias of the `contents` row of each content kind (joined as `content:<kind>`). */
export const CONTENT_ALIASES: Record<ContentKind, string> = {
  markdown: 'xmd',
  html: 'xhtml',
  rawHtml: 'xraw',
  links: 'xlinks',
  metadata: 'xmeta',
  extra: 'xextra',
};

/** The JSON type `splitItem` stores of each kind (a value of another type stays in the item). */
const INLINE_TYPE: Record<Exclude<ContentKind, 'extra'>, string> = {
  markdown: 'text',
  html: 'text',
  rawHtml: 'text',
  links: 'array',
  metadata: 'object',
};

/**
 * A short value kept in the item (`STORE_FROM_CHARS`), read only where the item has the key: a
 * row with nothing to read costs a substring search, not a parse of its item.
 */
function inline(kind: Exclude<ContentKind, 'extra'>): string {
  const path = `'$.${kind}'`;
  return `CASE WHEN instr(${ITEM}, '"${kind}":') > 0 AND json_type(${ITEM}, ${path}) = '${INLINE_TYPE[kind]}'
    THEN json_extract(${ITEM}, ${path}) END`;
}

/**
 * The text of a content kind, and the join it needs: stored in `contents`, or kept in the item.
 * The item's other outputs (`extra`) kept in the item are its own keys, so the item stands in.
 */
function content(kind: ContentKind): { sql: string; joins: ColumnJoin[] } {
  const stored = contentSql(CONTENT_ALIASES[kind]);
  const kept = kind === 'extra' ? ITEM : inline(kind);
  return { sql: `COALESCE(${stored}, ${kept})`, joins: [`content:${kind}`] };
}

const META = content('metadata');
/** The item's other outputs (summary, answer, highlights, json, ...), a JSON object. */
const EXTRA = content('extra');

function metaCol(name: string, type: ColumnType, sql: (doc: string) => string, doc: string) {
  return col(name, type, sql(META.sql), doc, META.joins);
}

function contentCol(name: string, type: ColumnType, kind: ContentKind, doc: string) {
  const { sql, joins } = content(kind);
  return col(name, type, sql, doc, joins);
}

/**
 * Reading a field of `item_json` parses the whole item (markdown included), so it is skipped
 * where the contract says the field cannot be: news and image fields on web results, and a
 * format's output on results whose search did not ask for that format (a result whose task row
 * is missing is read all the same).
 */
const NOT_WEB = "r.source <> 'web'";

function onlyIf(condition: string, sql: string): string {
  return `CASE WHEN ${condition} THEN ${sql} END`;
}

/** A format's output, read from the item's other outputs (`EXTRA`). */
function formatColumn(
  name: string,
  type: ColumnType,
  format: string,
  sql: (extra: string) => string,
  doc: string,
): ExportColumn {
  const asked = `COALESCE(instr(t.request_json, '"${format}"'), 1) > 0`;
  return col(name, type, onlyIf(asked, sql(EXTRA.sql)), doc, ['task', ...EXTRA.joins]);
}

/** The saved file of one media kind of the result (the media table, status `saved`). */
function mediaColumns(kind: 'screenshot' | 'audio' | 'video', alias: string): ExportColumn[] {
  return [
    col(
      `${kind}_file`,
      'string',
      `${alias}.path`,
      `saved ${kind} file, relative to the data directory`,
      ['media'],
    ),
    col(`${kind}_sha256`, 'string', `${alias}.sha256`, `SHA-256 of the saved ${kind}`, ['media']),
  ];
}

const ACTION_FILES = `NULLIF((SELECT json_group_array(json_object('kind', m.kind, 'index', m.item_index,
    'file', m.path, 'sha256', m.sha256)) FROM (SELECT kind, item_index, path, sha256 FROM media
    WHERE run_id = r.run_id AND task_key = r.task_key AND source = r.source
      AND position = r.position AND kind IN ('action-screenshot', 'action-pdf')
      AND status = 'saved' ORDER BY kind, item_index) m), '[]')`;

export const RESULT_COLUMNS: readonly ExportColumn[] = [
  col('run_id', 'string', 'r.run_id', 'run the result belongs to'),
  col('pipeline', 'string', 'p.name', 'pipeline name', ['pipeline']),
  col('task_key', 'string', 'r.task_key', 'task (one planned search) of the run', []),
  col('query', 'string', "json_extract(t.request_json, '$.query')", 'the search query', ['task']),
  col('source', 'string', 'r.source', '`web`, `news` or `images`'),
  col('position', 'integer', 'r.position', '0-based position within its source'),
  col('url', 'string', 'r.url', 'result URL'),
  col('title', 'string', 'r.title', 'result title'),
  col('description', 'string', 'r.description', '`description` (web) or `snippet` (news)'),
  col('category', 'string', 'r.category', 'source category, when categories were requested'),
  col(
    'date',
    'string',
    onlyIf(NOT_WEB, jsonText(ITEM, '$.date')),
    'news date, as the service wrote it',
  ),
  col(
    'image_url',
    'string',
    onlyIf(NOT_WEB, jsonText(ITEM, '$.imageUrl')),
    'image URL (images, news)',
  ),
  col(
    'image_width',
    'integer',
    onlyIf(NOT_WEB, jsonInt(ITEM, '$.imageWidth')),
    'image width in pixels',
  ),
  col(
    'image_height',
    'integer',
    onlyIf(NOT_WEB, jsonInt(ITEM, '$.imageHeight')),
    'image height in pixels',
  ),
  contentCol('markdown', 'string', 'markdown', 'scraped markdown'),
  contentCol('html', 'string', 'html', 'scraped HTML'),
  contentCol('raw_html', 'string', 'rawHtml', 'scraped raw HTML'),
  contentCol('links', 'json', 'links', 'scraped links (array of URLs)'),
  formatColumn(
    'summary',
    'string',
    'summary',
    (extra) => jsonText(extra, '$.summary'),
    'summary format output',
  ),
  formatColumn(
    'answer',
    'string',
    'question',
    (extra) => jsonText(extra, '$.answer'),
    'answer of a question format',
  ),
  formatColumn(
    'highlights',
    'json',
    'highlights',
    (extra) => jsonValue(extra, '$.highlights'),
    'highlights format output',
  ),
  formatColumn('json', 'json', 'json', (extra) => jsonValue(extra, '$.json'), 'json format output'),
  col('screenshot_url', 'string', 'r.screenshot_url', 'signed screenshot URL (expires)'),
  col('audio_url', 'string', 'r.audio_url', 'signed audio URL (expires)'),
  col('video_url', 'string', 'r.video_url', 'signed video URL (expires)'),
  metaCol('status_code', 'integer', (m) => jsonInt(m, '$.statusCode'), 'metadata.statusCode'),
  metaCol(
    'source_url',
    'string',
    (m) => jsonText(m, '$.sourceURL'),
    'metadata.sourceURL (requested)',
  ),
  metaCol('final_url', 'string', (m) => jsonText(m, '$.url'), 'metadata.url (after redirects)'),
  metaCol(
    'page_title',
    'string',
    (m) => `COALESCE(${jsonText(m, '$.title')}, ${jsonText(m, '$.title[0]')})`,
    'metadata.title (the first one when it is a list)',
  ),
  metaCol('language', 'string', (m) => jsonText(m, '$.language'), 'metadata.language'),
  metaCol('num_pages', 'integer', (m) => jsonInt(m, '$.numPages'), 'metadata.numPages (PDFs)'),
  metaCol(
    'scrape_error',
    'string',
    (m) => jsonText(m, '$.error'),
    'metadata.error (failed scrape)',
  ),
  metaCol('metadata', 'json', (m) => m, 'the whole metadata object'),
  ...mediaColumns('screenshot', 'ms'),
  ...mediaColumns('audio', 'ma'),
  ...mediaColumns('video', 'mv'),
  col(
    'action_files',
    'json',
    ACTION_FILES,
    'saved action screenshots and PDFs: [{kind, index, file, sha256}]',
    ['media'],
  ),
  col('search_id', 'string', 'r.search_id', "the service's search job id"),
  col('fetched_at', 'timestamp', 'r.fetched_at', 'when the response holding the row arrived'),
  col('first_seen_at', 'timestamp', 's.first_seen_at', 'when the pipeline first saw the URL', [
    'pipeline',
    'seen',
  ]),
  col('first_seen_run', 'string', 's.first_run_id', 'run that first saw the URL', [
    'pipeline',
    'seen',
  ]),
  col('last_seen_at', 'timestamp', 's.last_seen_at', 'when the pipeline last saw the URL', [
    'pipeline',
    'seen',
  ]),
  // From the run's recorded changes (src/store/changes/): null until the run has finished.
  col(
    'previous_position',
    'integer',
    'rc.previous_position',
    "the URL's position in the same search of the previous completed run",
    ['changes'],
  ),
  col(
    'last_changed_run',
    'string',
    'rc.last_changed_run',
    'run in which the URL entered the search, or its content last changed',
    ['changes'],
  ),
];

/**
 * `--of changes`: one row per result of a finished run and per result its search dropped, over
 * `x` (result_changes and dropped_results together, see export.ts).
 */
export const CHANGE_COLUMNS: readonly ExportColumn[] = [
  col('run_id', 'string', 'x.run_id', 'the run'),
  col('pipeline', 'string', 'p.name', 'pipeline name', ['pipeline']),
  col('baseline_run_id', 'string', 'cr.baseline_run_id', 'the run it was compared with'),
  col('search_key', 'string', 'x.search_key', 'the search across runs (entry, query, fields)'),
  col(
    'query',
    'string',
    "(SELECT json_extract(request_json, '$.query') FROM tasks WHERE run_id = x.task_run AND task_key = x.task_key)",
    'the search query',
  ),
  col('task_key', 'string', 'x.task_key', "the result's task (the baseline's when dropped)"),
  col('source', 'string', 'x.source', '`web`, `news` or `images`'),
  col('status', 'string', 'x.status', '`new`, `same`, `changed` or `dropped`'),
  col('position', 'integer', 'x.position', '0-based position; null when dropped'),
  col(
    'previous_position',
    'integer',
    'x.previous_position',
    'position in the baseline; null when new',
  ),
  col('url', 'string', 'x.url', 'result URL'),
  col('title', 'string', 'x.title', "result title (the baseline's when dropped)"),
  col('content_hash', 'string', 'x.content_hash', 'hash of the scraped content; null when dropped'),
  col('previous_hash', 'string', 'x.previous_hash', "the baseline's content hash; null when new"),
  col(
    'last_changed_run',
    'string',
    'x.last_changed_run',
    'run in which it entered or last changed',
  ),
];

export const CALL_COLUMNS: readonly ExportColumn[] = [
  col('call_id', 'string', 'c.call_id', 'the call (UUIDv7)'),
  col('run_id', 'string', 'c.run_id', 'run the call belongs to'),
  col('pipeline', 'string', 'p.name', 'pipeline name', ['pipeline']),
  col('task_key', 'string', 'c.task_key', 'task the call searched for'),
  col('attempt', 'integer', 'c.attempt', 'the job attempt, from 1 (429s spend none)'),
  col('purpose', 'string', 'c.purpose', '`search`, or `media-reissue` (fresh media URLs)'),
  col('started_at', 'timestamp', 'c.started_at', 'when the request was sent'),
  col('duration_ms', 'integer', 'c.duration_ms', 'time to the answer or the failure, in ms'),
  col('status', 'integer', 'c.status', 'HTTP status; null when no answer arrived'),
  col('outcome', 'string', 'c.outcome', '`ok` or an error code (`LOST`: its worker died)'),
  col('error_message', 'string', 'c.error_message', "the service's error message"),
  col('search_id', 'string', 'c.search_id', "the service's search job id"),
  col('warning', 'string', 'c.warning', "the service's warning"),
  col('credits_used', 'integer', 'c.credits_used', 'credits charged; null when unknown'),
  col('retry_after_ms', 'integer', 'c.retry_after_ms', 'the wait a 429 or 503 asked for, in ms'),
];

export const TASK_COLUMNS: readonly ExportColumn[] = [
  col('run_id', 'string', 't.run_id', 'run the task belongs to'),
  col('pipeline', 'string', 'p.name', 'pipeline name', ['pipeline']),
  col('task_key', 'string', 't.task_key', 'the task'),
  col('search_entry', 'string', 't.search_id', 'id of the search entry in the pipeline file'),
  col('query', 'string', "json_extract(t.request_json, '$.query')", 'the search query'),
  col('request', 'json', 't.request_json', 'the search request body'),
  col('tags', 'json', 't.tags_json', "the search entry's tags"),
  col('status', 'string', 't.status', '`queued`, `running`, `retrying`, `done` or `failed`'),
  col('attempts', 'integer', 't.attempts', 'attempts made'),
  col('last_error_code', 'string', 't.last_error_code', 'error code of the last failure'),
  col('last_error_message', 'string', 't.last_error_message', 'message of the last failure'),
  col('credits_used', 'integer', 't.credits_used', "sum of the task's known call credits"),
  col(
    'results',
    'integer',
    '(SELECT COUNT(*) FROM results x WHERE x.run_id = t.run_id AND x.task_key = t.task_key)',
    'result rows stored for the task',
  ),
  col('updated_at', 'timestamp', 't.updated_at', 'last status change (or planning)'),
];

export const EXPORT_COLUMNS: Record<ExportKind, readonly ExportColumn[]> = {
  results: RESULT_COLUMNS,
  calls: CALL_COLUMNS,
  tasks: TASK_COLUMNS,
  changes: CHANGE_COLUMNS,
};
