import fs from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { migrationNotice } from '../../../src/cli/migration-notice.ts';
import { type MigrationStep, openStore, SCHEMA_VERSION } from '../../../src/store/index.ts';
import { MIGRATIONS } from '../../../src/store/migrations.ts';
import { dumpTables, resultsEvent, seedRun, useTempStores, webItem } from './helpers.ts';

describe('openStore', () => {
  const stores = useTempStores();

  it('creates the folder, migrates, and sets WAL and foreign keys', () => {
    const store = stores.open();
    expect(fs.existsSync(store.path)).toBe(true);
    store.close();
    const db = new Sqlite(store.path, { readonly: true });
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      // A new file gives pages freed by `harvest prune` back (src/store/db.ts).
      expect(db.pragma('auto_vacuum', { simple: true })).toBe(2);
      const tables = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .pluck()
        .all();
      expect(tables).toEqual([
        'calls',
        'change_runs',
        'contents',
        'dropped_results',
        'media',
        'notification_attempts',
        'notifications',
        'pipelines',
        'pruned_costs',
        'result_changes',
        'results',
        'retention_due',
        'run_counts',
        'run_estimates',
        'run_media',
        'runs',
        'schedule_ticks',
        'seen_urls',
        'tasks',
      ]);
      const indexes = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        .pluck()
        .all();
      expect(indexes).toEqual(
        expect.arrayContaining([
          'calls_run',
          'calls_started',
          'results_url',
          'tasks_run_status',
          'runs_pipeline_created',
        ]),
      );
    } finally {
      db.close();
    }
  });

  it('reopening applies nothing again and keeps the data', () => {
    const store = stores.open();
    const { runId } = seedRun(store);
    const before = dumpTables(store.path);
    store.close();
    const again = stores.reopen(store);
    expect(again.runs.get(runId)?.status).toBe('running');
    again.close();
    const third = stores.reopen(store);
    third.close();
    expect(dumpTables(store.path)).toEqual(before);
  });

  it('enforces foreign keys', () => {
    const store = stores.open();
    expect(() =>
      store.runs.create({ id: 'r1', pipelineId: 999, trigger: 'manual', taskCount: 0 }),
    ).toThrow(/FOREIGN KEY/);
    expect(() => store.tasks.insertMany('no-such-run', [{ key: 'a', request: {} }])).toThrow(
      /FOREIGN KEY/,
    );
  });

  it('opens read-only for readers, and refuses a missing or foreign file', () => {
    const store = stores.open();
    const { runId } = seedRun(store);
    const reader = stores.reopen(store, { readonly: true });
    expect(reader.runs.get(runId)?.id).toBe(runId);
    expect(() => reader.runs.setStatus(runId, 'paused')).toThrow(/readonly/);

    const missing = path.join(stores.dir(), 'missing.db');
    expect(() => openStore(missing, { readonly: true })).toThrow(
      expect.objectContaining({ code: 'STORE_NOT_FOUND' }),
    );
    expect(fs.existsSync(missing)).toBe(false);
    // Opened to write by a command that acts on recorded runs (cancel, resume): not made either.
    expect(() => openStore(missing, { mustExist: true })).toThrow(
      expect.objectContaining({ code: 'STORE_NOT_FOUND', exitCode: 2 }),
    );
    expect(fs.existsSync(missing)).toBe(false);
  });

  it('refuses a database from a newer harvest, and an unmigrated one read-only', () => {
    const dir = stores.dir();
    const newer = path.join(dir, 'newer.db');
    const raw = new Sqlite(newer);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    expect(() => openStore(newer)).toThrow(
      expect.objectContaining({ code: 'STORE_TOO_NEW', exitCode: 3 }),
    );

    const blank = path.join(dir, 'blank.db');
    new Sqlite(blank).close();
    expect(() => openStore(blank, { readonly: true })).toThrow(
      expect.objectContaining({ code: 'STORE_OUTDATED', exitCode: 3 }),
    );
  });

  it('tells a copy of its own that lost its schema version (a .dump restore) how to set it', () => {
    const store = stores.open();
    const { runId } = seedRun(store);
    store.close();
    // `sqlite3 FILE .dump` keeps the tables and rows, not PRAGMA user_version.
    const raw = new Sqlite(store.path);
    raw.pragma('user_version = 0');
    raw.close();
    expect(() => openStore(store.path, { readonly: true })).toThrow(
      expect.objectContaining({
        code: 'STORE_FOREIGN',
        exitCode: 3,
        message: expect.stringContaining(`'PRAGMA user_version = ${SCHEMA_VERSION}'`),
      }),
    );
    // What it says to do works.
    const fix = new Sqlite(store.path);
    fix.pragma(`user_version = ${SCHEMA_VERSION}`);
    fix.close();
    const again = stores.reopen(store);
    expect(again.runs.get(runId)).toBeDefined();
  });

  it("refuses another application's SQLite file (tables, no schema version) and leaves it alone", () => {
    const dir = stores.dir();
    const foreign = path.join(dir, 'app.db');
    const raw = new Sqlite(foreign);
    raw.exec(
      'CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); CREATE VIEW v AS SELECT 1;',
    );
    raw.close();
    const before = fs.readFileSync(foreign);
    const expected = expect.objectContaining({
      code: 'STORE_FOREIGN',
      exitCode: 3,
      message: `${foreign} is a SQLite database, but not harvest's: it has tables (customers, v) and no harvest schema version; point HARVEST_DB elsewhere`,
    });
    expect(() => openStore(foreign)).toThrow(expected);
    expect(() => openStore(foreign, { readonly: true })).toThrow(expected);
    // Not a byte written: no harvest table, not even WAL mode.
    expect(fs.readFileSync(foreign).equals(before)).toBe(true);
    const check = new Sqlite(foreign, { readonly: true });
    try {
      expect(check.pragma('journal_mode', { simple: true })).toBe('delete');
      expect(
        check.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(),
      ).toEqual(['customers']);
    } finally {
      check.close();
    }

    // Its tables may collide with harvest's: refused all the same, not "table runs already exists".
    const colliding = path.join(dir, 'runs.db');
    const other = new Sqlite(colliding);
    other.exec('CREATE TABLE runs (x); INSERT INTO runs VALUES (1);');
    other.close();
    expect(() => openStore(colliding)).toThrow(expect.objectContaining({ code: 'STORE_FOREIGN' }));

    // An empty SQLite file (version 0, no tables) is a new database: migrated.
    const empty = path.join(dir, 'empty.db');
    new Sqlite(empty).close();
    const store = openStore(empty);
    store.close();
  });

  it('tells before and after it upgrades an existing database, and not when it makes one', () => {
    const steps: MigrationStep[] = [];
    const onMigrate = (step: MigrationStep) => steps.push(step);
    stores.open({ onMigrate }).close();
    expect(steps).toEqual([]);

    const file = path.join(stores.dir(), 'old.db');
    const raw = new Sqlite(file);
    for (const sql of MIGRATIONS.slice(0, 4)) raw.exec(sql);
    raw.pragma('user_version = 4');
    raw.close();
    openStore(file, { onMigrate }).close();
    expect(steps).toEqual([
      { file, from: 4, to: SCHEMA_VERSION },
      { file, from: 4, to: SCHEMA_VERSION, durationMs: expect.any(Number) },
    ]);
    expect(migrationNotice(steps[0]!)).toBe(
      `upgrading ${file} from schema version 4 to ${SCHEMA_VERSION}: once, in one transaction, which takes a while on a large database…`,
    );
    expect(migrationNotice({ ...steps[1]!, durationMs: 12_345 })).toBe(
      `upgraded ${file} to schema version ${SCHEMA_VERSION} in 12.3 s`,
    );
    // Up to date: nothing to tell.
    openStore(file, { onMigrate }).close();
    expect(steps).toHaveLength(2);
  });

  it('rebuilds the runs table for the interrupted status without losing tasks or counts', () => {
    const file = path.join(stores.dir(), 'v4.db');
    const raw = new Sqlite(file);
    raw.pragma('foreign_keys = ON');
    for (const sql of MIGRATIONS.slice(0, 4)) raw.exec(sql);
    raw.pragma('user_version = 4');
    raw.exec(`INSERT INTO pipelines (id, name, hash, yaml_text, created_at) VALUES (1, 'p', 'h', 'y', 1);
      INSERT INTO runs (id, pipeline_id, status, trigger, created_at) VALUES ('r1', 1, 'running', 'manual', 1);
      INSERT INTO tasks (run_id, task_key, request_json, updated_at) VALUES ('r1', 'a', '{}', 1), ('r1', 'b', '{}', 1);`);
    raw.close();

    const store = openStore(file);
    try {
      expect(store.tasks.counts('r1')).toMatchObject({ total: 2, queued: 2 });
      expect(store.runs.setStatus('r1', 'interrupted')).toBe(true);
      expect(store.runs.get('r1')?.status).toBe('interrupted');
      expect(() => store.tasks.insertMany('r2', [{ key: 'a', request: {} }])).toThrow(
        /FOREIGN KEY/,
      );
    } finally {
      store.close();
    }
  });

  it('numbers seen URLs in first-seen order and points each result at its row', () => {
    const file = path.join(stores.dir(), 'v8.db');
    const raw = new Sqlite(file);
    for (const sql of MIGRATIONS.slice(0, 8)) raw.exec(sql);
    raw.pragma('user_version = 8');
    const result = (run: string, position: number, url: string | null, at: number) =>
      `('${run}', 't', 'web', ${position}, ${url === null ? 'NULL' : `'${url}'`}, '{}', 'c', ${at}, ${at})`;
    raw.exec(`INSERT INTO pipelines (id, name, hash, yaml_text, created_at)
        VALUES (1, 'p', 'h', 'y', 1), (2, 'q', 'h', 'y', 1);
      INSERT INTO runs (id, pipeline_id, status, trigger, created_at)
        VALUES ('r1', 1, 'completed', 'manual', 1), ('r2', 1, 'completed', 'manual', 2),
               ('q1', 2, 'completed', 'manual', 3);
      INSERT INTO results (run_id, task_key, source, position, url, item_json, call_id,
                           first_seen_at, fetched_at)
        VALUES ${[
          result('r1', 0, 'https://c.example/', 10),
          result('r1', 1, 'https://b.example/', 10),
          result('r1', 2, null, 10),
          result('r2', 0, 'https://b.example/', 20),
          result('r2', 1, 'https://a.example/', 20),
          result('q1', 0, 'https://c.example/', 30),
        ].join(', ')};
      INSERT INTO seen_urls (pipeline_name, url, first_seen_at, last_seen_at, first_run_id,
                             last_run_id)
        VALUES ('p', 'https://a.example/', 20, 20, 'r2', 'r2'),
               ('p', 'https://b.example/', 10, 20, 'r1', 'r2'),
               ('p', 'https://c.example/', 10, 10, 'r1', 'r1'),
               ('q', 'https://c.example/', 30, 30, 'q1', 'q1');`);
    raw.close();

    const store = openStore(file);
    const db = new Sqlite(file, { readonly: true });
    try {
      const rows = db
        .prepare(
          `SELECT r.run_id AS run, r.position, s.id, s.pipeline_name AS pipeline, s.url,
                  s.first_run_id AS firstRun, s.last_run_id AS lastRun
           FROM results r LEFT JOIN seen_urls s ON s.id = r.seen_id
           ORDER BY r.run_id, r.position`,
        )
        .all();
      // First seen first (b and c in r1 at 10, by URL; then a at 20; q's c at 30).
      expect(rows).toEqual([
        {
          run: 'q1',
          position: 0,
          id: 4,
          pipeline: 'q',
          url: 'https://c.example/',
          firstRun: 'q1',
          lastRun: 'q1',
        },
        {
          run: 'r1',
          position: 0,
          id: 2,
          pipeline: 'p',
          url: 'https://c.example/',
          firstRun: 'r1',
          lastRun: 'r1',
        },
        {
          run: 'r1',
          position: 1,
          id: 1,
          pipeline: 'p',
          url: 'https://b.example/',
          firstRun: 'r1',
          lastRun: 'r2',
        },
        {
          run: 'r1',
          position: 2,
          id: null,
          pipeline: null,
          url: null,
          firstRun: null,
          lastRun: null,
        },
        {
          run: 'r2',
          position: 0,
          id: 1,
          pipeline: 'p',
          url: 'https://b.example/',
          firstRun: 'r1',
          lastRun: 'r2',
        },
        {
          run: 'r2',
          position: 1,
          id: 3,
          pipeline: 'p',
          url: 'https://a.example/',
          firstRun: 'r2',
          lastRun: 'r2',
        },
      ]);
      // Seen again, and a URL new to the pipeline: the row is kept, the new one numbered next.
      store.applyEvents([
        resultsEvent('r2', 't2', [
          webItem(1, { url: 'https://a.example/' }),
          webItem(2, { url: 'https://d.example/' }),
        ]),
      ]);
      const after = db
        .prepare(
          `SELECT r.position, s.id, s.url FROM results r JOIN seen_urls s ON s.id = r.seen_id
           WHERE r.task_key = 't2' ORDER BY r.position`,
        )
        .all();
      expect(after).toEqual([
        { position: 0, id: 3, url: 'https://a.example/' },
        { position: 1, id: 5, url: 'https://d.example/' },
      ]);
    } finally {
      db.close();
      store.close();
    }
  });

  it('close is idempotent', () => {
    const store = stores.open();
    store.close();
    expect(() => store.close()).not.toThrow();
  });
});
