/**
 * The queries behind `harvest export`: one SELECT per export, built from the chosen columns
 * (./export-columns.ts) and filters, read row by row with `Statement.iterate()` in raw mode
 * (an array per row, in column order), so memory does not grow with the number of rows.
 *
 * Results are in (run, task, source, position) order, calls in (started, call id) order, tasks
 * in (run, task) order. Open a store of its own for an export: nothing else may run on the
 * connection while the iterator is open.
 *
 * Over 300 lines: the three kinds' SELECTs share their column list, joins and filters, and the
 * paged reader must read exactly the rows the one-statement reader reads, so they stay together.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { ResultSource } from '../../events/store.ts';
import { CONTENT_COLUMNS, CONTENT_KINDS } from '../contents.ts';
import {
  CONTENT_ALIASES,
  type ColumnJoin,
  type ExportColumn,
  type ExportKind,
} from './export-columns.ts';

export interface ExportFilter {
  kind: ExportKind;
  /** Only this run. */
  runId?: string;
  /** Only runs of the pipeline with this name. */
  pipelineName?: string;
  /**
   * Inclusive lower bound in ms since the epoch on the row's time: a result's `fetched_at`, a
   * call's `started_at`, a task's run `created_at`.
   */
  sinceMs?: number;
  /** Results only: only this source. */
  source?: ResultSource;
  /**
   * Results only: results of this run and the pipeline's later runs whose URL the pipeline had
   * not seen before this run (from `seen_urls`). The run's pipeline is the only one exported.
   */
  newSince?: SinceRun;
  /** Results only: one row per URL (the first seen; rows without a URL are all kept). */
  uniqueUrls?: boolean;
  /** Results only: only those new or changed since their run's baseline (recorded changes). */
  onlyChanged?: boolean;
}

/** A run, as `--only-new` needs it. */
export interface SinceRun {
  id: string;
  /** ms since the epoch. */
  createdAt: number;
  pipelineName: string;
}

export interface ExportQuery {
  columns: readonly ExportColumn[];
  sql: string;
  params: Record<string, string | number>;
  /** The same rows in pages, when the export can be read so. */
  pages?: ExportPages;
}

/** The `contents` row of each content kind a result references. */
const CONTENT_JOINS = Object.fromEntries(
  CONTENT_KINDS.map((kind) => {
    const alias = CONTENT_ALIASES[kind];
    const join = `LEFT JOIN contents ${alias} ON ${alias}.hash = r.${CONTENT_COLUMNS[kind]}`;
    return [`content:${kind}`, join];
  }),
) as Record<`content:${(typeof CONTENT_KINDS)[number]}`, string>;

const RESULT_JOINS: Record<ColumnJoin, string> = {
  ...CONTENT_JOINS,
  pipeline: `LEFT JOIN runs ru ON ru.id = r.run_id
    LEFT JOIN pipelines p ON p.id = ru.pipeline_id`,
  task: 'LEFT JOIN tasks t ON t.run_id = r.run_id AND t.task_key = r.task_key',
  seen: 'LEFT JOIN seen_urls s ON s.id = r.seen_id',
  changes: `LEFT JOIN result_changes rc ON rc.run_id = r.run_id AND rc.task_key = r.task_key
    AND rc.source = r.source AND rc.position = r.position`,
  media: ['screenshot:ms', 'audio:ma', 'video:mv']
    .map((pair) => {
      const [kind, a] = pair.split(':');
      return `LEFT JOIN media ${a} ON ${a}.run_id = r.run_id AND ${a}.task_key = r.task_key
      AND ${a}.source = r.source AND ${a}.position = r.position AND ${a}.kind = '${kind}'
      AND ${a}.item_index = 0 AND ${a}.status = 'saved'`;
    })
    .join('\n    '),
};
const JOIN_ORDER: readonly ColumnJoin[] = [
  'pipeline',
  'task',
  'seen',
  'media',
  'changes',
  ...CONTENT_KINDS.map((kind) => `content:${kind}` as const),
];

/** The runs of a pipeline, for filters that use the results' and calls' run index. */
const RUNS_OF_PIPELINE = `(SELECT ru2.id FROM runs ru2 JOIN pipelines p2 ON p2.id = ru2.pipeline_id
  WHERE p2.name = @pipelineName)`;

/** A run created at or after the run `@sinceRunId` (ties broken by id). */
function atOrAfterSinceRun(alias: string): string {
  return `(${alias}.created_at > @sinceRunCreatedAt
    OR (${alias}.created_at = @sinceRunCreatedAt AND ${alias}.id >= @sinceRunId))`;
}

function selectList(columns: readonly ExportColumn[]): string {
  return columns.map((c) => `${c.sql} AS "${c.name}"`).join(',\n  ');
}

function joinsOf(columns: readonly ExportColumn[], extra: readonly ColumnJoin[]): ColumnJoin[] {
  const wanted = new Set<ColumnJoin>(extra);
  for (const c of columns) for (const j of c.joins) wanted.add(j);
  return JOIN_ORDER.filter((j) => wanted.has(j));
}

/** The order of results: also their key (the table's primary key). */
const RESULT_KEY = ['r.run_id', 'r.task_key', 'r.source', 'r.position'] as const;

/** What a results SELECT reads besides the filter: its select list, more conditions, a tail. */
interface ResultsShape {
  select: string;
  /** Conditions on the key: the only ones the rows are looked up by (see `keyRange`). */
  where?: readonly string[];
  tail?: string;
}

function resultsQuery(
  columns: readonly ExportColumn[],
  f: ExportFilter,
  shape?: ResultsShape,
): string {
  const sinceRun = f.newSince;
  const where: string[] = [...(shape?.where ?? [])];
  const extraJoins: ColumnJoin[] = [];
  // With conditions on the key, those alone choose the rows to look at (`+` keeps SQLite from
  // looking rows up by run instead, which would read every page from the run's first row on).
  const runId = shape?.where?.length ? '+r.run_id' : 'r.run_id';
  if (f.runId !== undefined) where.push(`${runId} = @runId`);
  if (f.pipelineName !== undefined) where.push(`${runId} IN ${RUNS_OF_PIPELINE}`);
  if (f.sinceMs !== undefined) where.push('r.fetched_at >= @sinceMs');
  if (f.source !== undefined) where.push('r.source = @source');
  if (f.onlyChanged) {
    extraJoins.push('changes');
    where.push("rc.status IN ('new', 'changed')");
  }
  if (sinceRun) {
    extraJoins.push('pipeline', 'seen');
    where.push(
      'p.id IN (SELECT id FROM pipelines WHERE name = @sinceRunPipeline)',
      atOrAfterSinceRun('ru'),
      `s.first_run_id IN (SELECT fr.id FROM runs fr WHERE ${atOrAfterSinceRun('fr')})`,
    );
  }
  const joins = joinsOf(columns, extraJoins)
    .map((j) => RESULT_JOINS[j])
    .join('\n');
  const whereSql = where.length > 0 ? `WHERE ${where.join('\n  AND ')}` : '';
  const order = RESULT_KEY.join(', ');
  if (!f.uniqueUrls) {
    const select = shape?.select ?? selectList(columns);
    const tail = shape?.tail === undefined ? '' : `\n${shape.tail}`;
    return `SELECT ${select}\nFROM results r\n${joins}\n${whereSql}\nORDER BY ${order}${tail}`;
  }
  // One row per URL, the first seen: rank the rows of a URL by when their slot was first filled.
  const filterJoins = joinsOf([], extraJoins)
    .map((j) => RESULT_JOINS[j])
    .join('\n');
  const firsts = `SELECT id FROM (SELECT r.rowid AS id, r.url, ROW_NUMBER() OVER (
      PARTITION BY r.url ORDER BY r.first_seen_at, ${order}) AS nth
    FROM results r\n${filterJoins}\n${whereSql}) WHERE url IS NULL OR nth = 1`;
  return `SELECT ${selectList(columns)}\nFROM results r\n${joins}
WHERE r.rowid IN (${firsts})\nORDER BY ${order}`;
}

function callsQuery(columns: readonly ExportColumn[], f: ExportFilter): string {
  const where: string[] = [];
  if (f.runId !== undefined) where.push('c.run_id = @runId');
  if (f.pipelineName !== undefined) where.push(`c.run_id IN ${RUNS_OF_PIPELINE}`);
  if (f.sinceMs !== undefined) where.push('c.started_at >= @sinceMs');
  const joins = joinsOf(columns, []).includes('pipeline')
    ? 'LEFT JOIN runs ru ON ru.id = c.run_id LEFT JOIN pipelines p ON p.id = ru.pipeline_id'
    : '';
  const whereSql = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
  return `SELECT ${selectList(columns)}\nFROM calls c ${joins}\n${whereSql}\nORDER BY c.started_at, c.call_id`;
}

/**
 * `--of changes`: each run's recorded results (`new`, `same`, `changed`) and the results its
 * searches dropped, as one list `x`, in (run, search, source, position) order, dropped last.
 */
function changesQuery(columns: readonly ExportColumn[], f: ExportFilter): string {
  const where: string[] = [];
  if (f.runId !== undefined) where.push('x.run_id = @runId');
  if (f.pipelineName !== undefined) where.push(`x.run_id IN ${RUNS_OF_PIPELINE}`);
  if (f.sinceMs !== undefined) where.push('ru.created_at >= @sinceMs');
  const whereSql = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
  return `SELECT ${selectList(columns)}
FROM (
  SELECT c.run_id, c.run_id AS task_run, c.task_key, c.source, c.position, r.url, r.title,
    c.search_key, c.status, c.previous_position, c.content_hash, c.previous_hash,
    c.last_changed_run
  FROM result_changes c
    JOIN results r ON r.run_id = c.run_id AND r.task_key = c.task_key AND r.source = c.source
      AND r.position = c.position
  UNION ALL
  SELECT d.run_id, cr2.baseline_run_id, d.previous_task_key, d.source, NULL, d.url, r.title,
    d.search_key, 'dropped', d.previous_position, NULL, d.previous_hash, NULL
  FROM dropped_results d
    JOIN change_runs cr2 ON cr2.run_id = d.run_id
    LEFT JOIN results r ON r.run_id = cr2.baseline_run_id AND r.task_key = d.previous_task_key
      AND r.source = d.source AND r.position = d.previous_position
) x
LEFT JOIN change_runs cr ON cr.run_id = x.run_id
LEFT JOIN runs ru ON ru.id = x.run_id LEFT JOIN pipelines p ON p.id = ru.pipeline_id
${whereSql}
ORDER BY x.run_id, x.search_key, x.source, x.position IS NULL, x.position, x.previous_position`;
}

function tasksQuery(columns: readonly ExportColumn[], f: ExportFilter): string {
  const where: string[] = [];
  if (f.runId !== undefined) where.push('t.run_id = @runId');
  if (f.pipelineName !== undefined) where.push(`t.run_id IN ${RUNS_OF_PIPELINE}`);
  if (f.sinceMs !== undefined) where.push('ru.created_at >= @sinceMs');
  const whereSql = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
  return `SELECT ${selectList(columns)}\nFROM tasks t
LEFT JOIN runs ru ON ru.id = t.run_id LEFT JOIN pipelines p ON p.id = ru.pipeline_id
${whereSql}\nORDER BY t.run_id, t.task_key`;
}

/**
 * An export read in pages, in order: each page is the rows between two keys of the rows' order
 * (a unique key), so pages can be read on other connections, each by whoever is free, and
 * written in order. Bounds are found with `keyAt` on one connection; every row that was there
 * when its bound was found is in exactly one page, whatever is written meanwhile. Bind the
 * export's `params`, and the bounds as `lo<i>` (exclusive) and `hi<i>` (inclusive).
 */
export interface ExportPages {
  /** The rows from the key `lo` up to the key `hi`, both included. */
  from: string;
  /** The rows past the key `lo` up to the key `hi`. */
  between: string;
  /** The rows past the key `lo`. */
  past: string;
  /** The key of the `@nth` row (from 1). */
  keyFromStart: string;
  /** The key of the `@nth` row past the key `lo`. */
  keyPast: string;
}

/** A row's order key. */
export type ExportKey = (string | number)[];

/**
 * A page: the rows past `lo` (from `lo` on when `fromLo`) up to `hi` included (to the end when
 * null).
 */
export interface PageBounds {
  lo: ExportKey;
  fromLo?: boolean;
  hi: ExportKey | null;
}

/** Results, in pages; undefined for exports that cannot be paged (`uniqueUrls`, calls, tasks). */
function resultPages(columns: readonly ExportColumn[], f: ExportFilter): ExportPages | undefined {
  if (f.kind !== 'results' || f.uniqueUrls) return undefined;
  const key = `(${RESULT_KEY.join(', ')})`;
  const bound = (name: string) => `(${RESULT_KEY.map((_, i) => `@${name}${i}`).join(', ')})`;
  const past = `${key} > ${bound('lo')}`;
  const upTo = `${key} <= ${bound('hi')}`;
  const select = selectList(columns);
  const keySelect = RESULT_KEY.join(', ');
  const nth = 'LIMIT 1 OFFSET @nth - 1';
  return {
    from: resultsQuery(columns, f, { select, where: [`${key} >= ${bound('lo')}`, upTo] }),
    between: resultsQuery(columns, f, { select, where: [past, upTo] }),
    past: resultsQuery(columns, f, { select, where: [past] }),
    keyFromStart: resultsQuery([], f, { select: keySelect, tail: nth }),
    keyPast: resultsQuery([], f, { select: keySelect, where: [past], tail: nth }),
  };
}

export interface BuildOptions {
  /**
   * No media is saved (see `ExportReader.hasSavedMedia`): the media columns are NULL without
   * reading the media table, which saves three lookups per row. Default false.
   */
  withoutMedia?: boolean;
  /**
   * Columns read as their UTF-8 bytes (a Buffer, NULL staying null), not as strings: for an
   * encoder that wants bytes anyway (Parquet), long text then never becomes a string on the
   * JavaScript heap. Default none.
   */
  asBytes?: ReadonlySet<string>;
}

/** The columns whose text may be long (scraped content, JSON): Parquet reads them as bytes. */
export const LONG_TEXT_COLUMNS: ReadonlySet<string> = new Set([
  'markdown',
  'html',
  'raw_html',
  'links',
  'summary',
  'answer',
  'highlights',
  'json',
  'metadata',
  'action_files',
]);

/** The SQL and parameters of an export. Pure: no database needed. */
export function buildExportQuery(
  chosen: readonly ExportColumn[],
  filter: ExportFilter,
  options: BuildOptions = {},
): ExportQuery {
  const sinceRun = filter.newSince;
  if (chosen.length === 0) throw new Error('an export needs at least one column');
  const asBytes = options.asBytes ?? new Set<string>();
  const columns = chosen.map((c) => {
    if (options.withoutMedia && c.joins.includes('media')) return { ...c, sql: 'NULL', joins: [] };
    return asBytes.has(c.name) ? { ...c, sql: `CAST((${c.sql}) AS BLOB)` } : c;
  });
  const params: Record<string, string | number> = {};
  if (filter.runId !== undefined) params.runId = filter.runId;
  if (filter.pipelineName !== undefined) params.pipelineName = filter.pipelineName;
  if (filter.sinceMs !== undefined) params.sinceMs = filter.sinceMs;
  if (filter.source !== undefined) params.source = filter.source;
  if (sinceRun) {
    params.sinceRunId = sinceRun.id;
    params.sinceRunCreatedAt = sinceRun.createdAt;
    params.sinceRunPipeline = sinceRun.pipelineName;
  }
  const sql =
    filter.kind === 'results'
      ? resultsQuery(columns, filter)
      : filter.kind === 'calls'
        ? callsQuery(columns, filter)
        : filter.kind === 'changes'
          ? changesQuery(columns, filter)
          : tasksQuery(columns, filter);
  return { columns: chosen, sql, params, pages: resultPages(columns, filter) };
}

/** A row of an export: one value per column, in column order. */
export type ExportRow = (string | number | null)[];

export interface ExportReader {
  /** Streams the rows of `query` (raw arrays). Do not use the store while it is open. */
  iterate(query: ExportQuery): IterableIterator<ExportRow>;
  /** How many rows `query` yields (one pass over the same rows, for a progress bar). */
  count(query: ExportQuery): number;
  /** Whether any media file is saved yet (the media columns are all empty otherwise). */
  hasSavedMedia(): boolean;
  /** Streams the rows of one page of `query` (raw arrays); needs `query.pages`. */
  iteratePage(query: ExportQuery, bounds: PageBounds): IterableIterator<ExportRow>;
  /**
   * The key of the `nth` row (from 1) past `lo` (from the start when null), or undefined when
   * there are fewer rows. Needs `query.pages`.
   */
  keyAt(query: ExportQuery, lo: ExportKey | null, nth: number): ExportKey | undefined;
}

function pagesOf(query: ExportQuery): ExportPages {
  if (!query.pages) throw new Error('this export cannot be read in pages');
  return query.pages;
}

function bind(
  query: ExportQuery,
  bounds: Record<string, ExportKey | null>,
  extra: Record<string, number> = {},
): Record<string, string | number> {
  const bound: Record<string, string | number> = { ...query.params, ...extra };
  for (const [name, key] of Object.entries(bounds)) {
    if (key !== null) for (let i = 0; i < key.length; i++) bound[`${name}${i}`] = key[i]!;
  }
  return bound;
}

function pageSql(pages: ExportPages, { fromLo, hi }: PageBounds): string {
  if (hi === null) {
    if (fromLo) throw new Error('a page from a key has an end');
    return pages.past;
  }
  return fromLo ? pages.from : pages.between;
}

/** Page cache of an export's connection, in KiB. */
export const SCAN_CACHE_KIB = 16 * 1024;
/**
 * Page cache of a connection that reads pages of an export beside others (`iteratePage`), in
 * KiB: each reader thread has one, and past a few MB it buys little (the rows are read once).
 */
export const PAGE_CACHE_KIB = 4 * 1024;

export function createExportReader(db: Database): ExportReader {
  // Pages run the same few statements over and over: each is prepared once.
  const prepared = new Map<string, Statement<Record<string, string | number>, unknown[]>>();
  const statement = (sql: string) => {
    let stmt = prepared.get(sql);
    if (!stmt) {
      stmt = db.prepare<Record<string, string | number>, unknown[]>(sql).raw(true);
      prepared.set(sql, stmt);
    }
    return stmt;
  };
  const savedMedia = db
    .prepare<[], number>("SELECT EXISTS (SELECT 1 FROM media WHERE status = 'saved')")
    .pluck();
  return {
    iterate(query) {
      // A larger page cache than the default 2 MB, for the rows joined to each result (sized
      // when seen_urls lookups were in URL order; not measured again since migration 9).
      db.pragma(`cache_size = -${SCAN_CACHE_KIB}`);
      return db
        .prepare<Record<string, string | number>, ExportRow>(query.sql)
        .raw(true)
        .iterate(query.params);
    },
    hasSavedMedia: () => savedMedia.get() === 1,
    iteratePage(query, bounds) {
      const sql = pageSql(pagesOf(query), bounds);
      db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
      return statement(sql).iterate(
        bind(query, { lo: bounds.lo, hi: bounds.hi }),
      ) as IterableIterator<ExportRow>;
    },
    keyAt(query, lo, nth) {
      const pages = pagesOf(query);
      const sql = lo === null ? pages.keyFromStart : pages.keyPast;
      return statement(sql).get(bind(query, { lo }, { nth })) as ExportKey | undefined;
    },
    count(query) {
      const n = db
        .prepare<Record<string, string | number>, number>(`SELECT COUNT(*) FROM (${query.sql})`)
        .pluck()
        .get(query.params);
      return n ?? 0;
    },
  };
}
