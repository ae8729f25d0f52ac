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

export const EXPORT_KINDS = ['results', 'calls', 'tasks'] as const;
export type ExportKind = (typeof EXPORT_KINDS)[number];

export type ColumnType = 'string' | 'integer' | 'timestamp' | 'json';

/**
 * Tables a column's expression reads besides its kind's own table (`media` also marks columns
 * that read the media table in a subquery).
 */
export type ColumnJoin = 'pipeline' | 'task' | 'seen' | 'media';

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
const META = 'r.metadata_json';

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

function formatColumn(
  name: string,
  type: ColumnType,
  format: string,
  sql: string,
  doc: string,
): ExportColumn {
  const asked = `COALESCE(instr(t.request_json, '"${format}"'), 1) > 0`;
  return col(name, type, onlyIf(asked, sql), doc, ['task']);
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
  col('markdown', 'string', 'r.markdown', 'scraped markdown'),
  col('html', 'string', 'r.html', 'scraped HTML'),
  col('raw_html', 'string', 'r.raw_html', 'scraped raw HTML'),
  col('links', 'json', 'r.links_json', 'scraped links (array of URLs)'),
  formatColumn(
    'summary',
    'string',
    'summary',
    jsonText(ITEM, '$.summary'),
    'summary format output',
  ),
  formatColumn(
    'answer',
    'string',
    'question',
    jsonText(ITEM, '$.answer'),
    'answer of a question format',
  ),
  formatColumn(
    'highlights',
    'json',
    'highlights',
    jsonValue(ITEM, '$.highlights'),
    'highlights format output',
  ),
  formatColumn('json', 'json', 'json', jsonValue(ITEM, '$.json'), 'json format output'),
  col('screenshot_url', 'string', 'r.screenshot_url', 'signed screenshot URL (expires)'),
  col('audio_url', 'string', 'r.audio_url', 'signed audio URL (expires)'),
  col('video_url', 'string', 'r.video_url', 'signed video URL (expires)'),
  col('status_code', 'integer', jsonInt(META, '$.statusCode'), 'metadata.statusCode'),
  col('source_url', 'string', jsonText(META, '$.sourceURL'), 'metadata.sourceURL (requested)'),
  col('final_url', 'string', jsonText(META, '$.url'), 'metadata.url (after redirects)'),
  col(
    'page_title',
    'string',
    `COALESCE(${jsonText(META, '$.title')}, ${jsonText(META, '$.title[0]')})`,
    'metadata.title (the first one when it is a list)',
  ),
  col('language', 'string', jsonText(META, '$.language'), 'metadata.language'),
  col('num_pages', 'integer', jsonInt(META, '$.numPages'), 'metadata.numPages (PDFs)'),
  col('scrape_error', 'string', jsonText(META, '$.error'), 'metadata.error (failed scrape)'),
  col('metadata', 'json', META, 'the whole metadata object'),
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
};
