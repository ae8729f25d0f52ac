/**
 * Content stored once: a database of schema 11 (test/fixtures/content-v11, three runs of a
 * pipeline scraping every kind of content, written by harvest before contents existed, with
 * its exports made then) is migrated, and its exports are the same, byte for byte, in the
 * columns the fixture has (columns added since are left out of the comparison). A harvest of
 * the old layout still writing to a migrated file is refused, saying why; a migration while
 * another process holds the write lock is refused too.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import Sqlite from 'better-sqlite3';
import { parse as parseCsv } from 'csv-parse/sync';
import { readParquet } from 'parquet-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_FROM_CHARS } from '../../src/store/contents.ts';
import { type MigrationStep, openStore } from '../../src/store/index.ts';
import { BIN } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const FIXTURE = path.resolve('test/fixtures/content-v11');
const RUNS = ['20261206T092335-swt2', '20261206T092337-cz00', '20261206T092338-c6w0'];

/** The fixture's exports and the arguments that made them. */
const EXPORTS: Record<string, string[]> = {
  'all.jsonl': ['--pipeline', 'content-fixture', '--format', 'jsonl'],
  'all.csv': ['--pipeline', 'content-fixture', '--format', 'csv'],
  'all.parquet': ['--pipeline', 'content-fixture', '--format', 'parquet'],
  'run2.jsonl': ['--run', RUNS[1]!, '--format', 'jsonl'],
  'run2.csv': ['--run', RUNS[1]!, '--format', 'csv'],
  'run2.parquet': ['--run', RUNS[1]!, '--format', 'parquet'],
  'only-new-run3.jsonl': ['--only-new', '--run', RUNS[2]!, '--format', 'jsonl'],
  'only-new-since-run2.csv': [
    '--pipeline',
    'content-fixture',
    '--only-new',
    '--since-run',
    RUNS[1]!,
    '--format',
    'csv',
  ],
  'unique-urls.jsonl': ['--pipeline', 'content-fixture', '--unique-urls', '--format', 'jsonl'],
  'news-fields.csv': [
    '--pipeline',
    'content-fixture',
    '--source',
    'news',
    '--fields',
    'url,markdown,metadata,summary,json,highlights,answer,status_code,page_title',
    '--format',
    'csv',
  ],
};

const tmp = tempDir('contents-migration-');
afterAll(() => tmp.remove());

function copyFixture(name: string): string {
  const file = path.join(tmp.dir, name);
  fs.copyFileSync(path.join(FIXTURE, 'harvest-v11.sqlite'), file);
  return file;
}

function exportTo(db: string, name: string, args: readonly string[]): Buffer {
  const out = path.join(tmp.dir, name);
  const cli = spawnSync(process.execPath, [BIN, 'export', ...args, '--out', out], {
    env: { PATH: process.env.PATH, HARVEST_DB: db, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
  });
  expect(cli.stderr).toBe('');
  expect(cli.status).toBe(0);
  return fs.readFileSync(out);
}

/** JSONL lines with only the keys of `keys`, in that order. */
function projectJsonl(text: string, keys: readonly string[]): string[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const row = JSON.parse(line) as Record<string, unknown>;
      return JSON.stringify(Object.fromEntries(keys.map((k) => [k, row[k]])));
    });
}

function csvCells(text: string, columns: readonly string[]): string[][] {
  const [header = [], ...rows] = parseCsv(text, { relax_column_count: false }) as string[][];
  const at = columns.map((c) => header.indexOf(c));
  expect(at).not.toContain(-1);
  return rows.map((row) => at.map((i) => row[i] ?? ''));
}

function parquetRows(bytes: Buffer): Record<string, unknown>[] {
  const table = tableFromIPC(readParquet(bytes).intoIPCStream());
  return table.toArray().map((row: { toJSON(): Record<string, unknown> }) => row.toJSON());
}

/** Asserts `now` is the fixture's export `name`, in the fixture's columns. */
function expectSameExport(name: string, now: Buffer): void {
  const before = fs.readFileSync(path.join(FIXTURE, name));
  if (name.endsWith('.parquet')) {
    const old = parquetRows(before);
    const keys = Object.keys(old[0] ?? {});
    const project = (row: Record<string, unknown>) =>
      Object.fromEntries(keys.map((k) => [k, row[k]]));
    expect(parquetRows(now).map(project)).toEqual(old);
    return;
  }
  const [oldHeader = ''] = before.toString('utf8').split(name.endsWith('.csv') ? '\r\n' : '\n');
  if (name.endsWith('.csv')) {
    const columns = oldHeader.split(',');
    if (now.toString('utf8').startsWith(`${oldHeader}\r\n`)) expect(now.equals(before)).toBe(true);
    expect(csvCells(now.toString('utf8'), columns)).toEqual(
      csvCells(before.toString('utf8'), columns),
    );
    return;
  }
  const keys = Object.keys(JSON.parse(oldHeader) as object);
  const oldLines = before.toString('utf8').split('\n').filter(Boolean);
  // The projection of a fixture line is the line itself: the comparison is of bytes.
  expect(projectJsonl(before.toString('utf8'), keys)).toEqual(oldLines);
  expect(projectJsonl(now.toString('utf8'), keys)).toEqual(oldLines);
}

describe('content stored once: migrating a schema-11 database', () => {
  let migrated: string;
  const steps: MigrationStep[] = [];

  beforeAll(() => {
    migrated = copyFixture('migrated.db');
    const store = openStore(migrated, { onMigrate: (step) => steps.push(step) });
    store.close();
  });

  it('converts the rows in one upgrade, saying what it saved', () => {
    expect(steps.map((s) => s.note).filter(Boolean)).toEqual([
      expect.stringMatching(/^stored the content of 52 results once, compressed: .* saved/),
    ]);
    const db = new Sqlite(migrated, { readonly: true });
    try {
      // The old content columns are gone.
      const columns = db
        .prepare<[], string>("SELECT name FROM pragma_table_info('results')")
        .pluck()
        .all();
      expect(columns).not.toContain('markdown');
      expect(columns).not.toContain('raw_html');
      expect(columns).toContain('markdown_hash');
      // Three runs, the first two with the same answers: each distinct value once.
      const distinct = db
        .prepare('SELECT COUNT(DISTINCT markdown_hash) FROM results')
        .pluck()
        .get();
      const contents = db.prepare('SELECT COUNT(*) FROM contents').pluck().get() as number;
      expect(contents).toBeGreaterThanOrEqual(distinct as number);
      // No long value left in a row's item: each is in contents.
      for (const key of ['markdown', 'html', 'rawHtml']) {
        const long = db
          .prepare(
            `SELECT COUNT(*) FROM results WHERE length(json_extract(item_json, '$.${key}')) >= ?`,
          )
          .pluck()
          .get(STORE_FROM_CHARS);
        expect(long, key).toBe(0);
      }
    } finally {
      db.close();
    }
  });

  it.each(Object.entries(EXPORTS))('exports %s as before', (name, args) => {
    expectSameExport(name, exportTo(migrated, name, args));
  });

  it('gives back every item as the API sent it', () => {
    const original = new Sqlite(path.join(FIXTURE, 'harvest-v11.sqlite'), { readonly: true });
    const store = openStore(migrated, { readonly: true });
    try {
      const items = original
        .prepare<[], { item_json: string }>(
          'SELECT item_json FROM results ORDER BY run_id, task_key, source, position',
        )
        .all()
        .map((r) => r.item_json);
      const rows = [...store.iterateResults({ pipelineName: 'content-fixture' })];
      expect(rows.map((r) => r.itemJson)).toEqual(items);
      const first = rows.find((r) => r.markdown !== null);
      expect(JSON.parse(first?.itemJson ?? '{}')).toMatchObject({ markdown: first?.markdown });
    } finally {
      store.close();
      original.close();
    }
  });

  it('refuses a harvest of the old layout writing to the migrated file', () => {
    const db = new Sqlite(migrated);
    try {
      // The statement the previous version writes a result with.
      const write = () =>
        db
          .prepare(
            `INSERT INTO results (run_id, task_key, source, position, url, markdown, item_json,
               call_id, first_seen_at, fetched_at)
             VALUES ('r', 't', 'web', 0, 'https://a.example', '# A', '{}', 'c', 1, 1)`,
          )
          .run();
      expect(write).toThrow(/table results has no column named markdown/);
    } finally {
      db.close();
    }
  });

  it('refuses to migrate while a running pool holds the database, saying so', () => {
    const file = copyFixture('busy.db');
    const pool = new Sqlite(file);
    try {
      pool.prepare('BEGIN IMMEDIATE').run();
      expect(() => openStore(file, { busyTimeoutMs: 50 })).toThrow(
        /locked by another process.*stop the other harvest/,
      );
      pool.prepare('ROLLBACK').run();
      expect(new Sqlite(file).pragma('user_version', { simple: true })).toBe(11);
    } finally {
      pool.close();
    }
  });
});
