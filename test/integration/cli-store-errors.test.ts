/**
 * Databases a command cannot use, through the real binary: exit 3 (the environment) in one line
 * naming the file, never a stack trace: another application's SQLite file, a data folder that
 * is a file, a disk that fills up while the database is made or a run is planned, a database
 * deleted under a run.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.ts';
import { BIN, cliEnv, runCli, spawnCli, useCliFixture } from '../helpers/cli.ts';
import { deletePrefix, freshPrefix } from '../helpers/redis.ts';
import { testSettings } from '../helpers/settings.ts';
import { waitFor } from '../helpers/wait.ts';

const GOOD = 'name: good\nsearches:\n  - query: web data\n    limit: 1\n';

const cli = useCliFixture('cli-store-errors');

/** One line on stderr that names the problem; never a stack trace. */
function expectOneLine(stderr: string): void {
  expect(stderr).not.toMatch(/\n\s+at /);
  expect(stderr.trim().split('\n')).toHaveLength(1);
  expect(stderr).toMatch(/^harvest: /);
}

function foreignDb(name: string, ddl: string): string {
  const p = path.join(cli.dir, name);
  const db = new Sqlite(p);
  db.exec(ddl);
  db.close();
  return p;
}

function tablesOf(p: string): string[] {
  const db = new Sqlite(p, { readonly: true });
  try {
    return db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
      .pluck()
      .all() as string[];
  } finally {
    db.close();
  }
}

/** Runs the binary with files limited to `kb` KiB (`ulimit -f`): writes beyond fail. */
function runLimited(
  kb: number,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    'bash',
    ['-c', `ulimit -f ${kb} && exec "$@"`, 'bash', process.execPath, BIN, ...args],
    { env: cliEnv(cli.settings, env), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += String(chunk);
  });
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe("another application's SQLite file", () => {
  it('is refused by a writer, exit 3 in one line naming it, even when its tables collide', async () => {
    const db = foreignDb('app-with-runs.db', 'create table runs (x); insert into runs values (1);');
    const r = await runCli(['run', cli.file('good.yaml', GOOD), '--json'], cli.settings, {
      HARVEST_DB: db,
    });
    expect(r.code).toBe(3);
    expectOneLine(r.stderr);
    expect(r.stderr).toContain(`${db} is a SQLite database, but not harvest's`);
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: 'STORE_FOREIGN', exitCode: 3 });
    expect(tablesOf(db)).toEqual(['runs']);
  });

  it('is left alone: no harvest table is written into it', async () => {
    const db = foreignDb('app.db', 'create table customers (id integer primary key, name text);');
    const r = await runCli(['run', cli.file('good.yaml', GOOD)], cli.settings, { HARVEST_DB: db });
    expect(r.code).toBe(3);
    expect(tablesOf(db)).toEqual(['customers']);
  });

  it('is refused by a reader, which does not advise migrating it', async () => {
    const db = foreignDb('app2.db', 'create table customers (id integer primary key);');
    for (const args of [['status'], ['report', 'costs'], ['media']]) {
      const r = await runCli(args, cli.settings, { HARVEST_DB: db });
      expect({ args, code: r.code }).toEqual({ args, code: 3 });
      expectOneLine(r.stderr);
      expect(r.stderr).toContain('(customers)');
      expect(r.stderr).not.toContain('migrates it');
    }
  });
});

describe('a data folder that is a file', () => {
  it('status says so and exits 3, as every other command does', async () => {
    const notDir = cli.file('not-a-dir', 'x');
    const env = { HARVEST_DATA_DIR: notDir, HARVEST_DB: path.join(notDir, 'harvest.db') };
    for (const args of [['status'], ['status', '--json'], ['media']]) {
      const r = await runCli(args, cli.settings, env);
      expect({ args, code: r.code }).toEqual({ args, code: 3 });
      expectOneLine(r.stderr);
      expect(r.stderr).toContain(`${notDir} is not a folder`);
    }
  });
});

describe('a disk that fills up', () => {
  it('while the database is made: exit 3 in one line naming the file', async () => {
    const db = path.join(cli.dir, 'full-new', 'harvest.db');
    for (const kb of [8, 64]) {
      const r = await runLimited(kb, ['run', cli.file('good.yaml', GOOD), '--json'], {
        HARVEST_DB: db,
      });
      expect({ kb, code: r.code }).toEqual({ kb, code: 3 });
      expectOneLine(r.stderr);
      expect(r.stderr).toContain(db);
      expect(JSON.parse(r.stdout).error.code).toMatch(/^STORE_(FULL|IO_ERROR)$/);
    }
  });

  it('while a run is planned: exit 3 in one line naming the file', async () => {
    const db = path.join(cli.dir, 'full-plan', 'harvest.db');
    mkdirSync(path.dirname(db), { recursive: true });
    expect(
      (await runCli(['run', cli.file('good.yaml', GOOD)], cli.settings, { HARVEST_DB: db })).code,
    ).toBe(0);
    const a = Array.from({ length: 30 }, (_, i) => `a${i}`).join(', ');
    const b = Array.from({ length: 30 }, (_, i) => `b${i}`).join(', ');
    const big = cli.file(
      'big.yaml',
      `name: big\nsearches:\n  - id: s\n    query: "q {a} {b}"\n    limit: 1\n    matrix:\n      a: [${a}]\n      b: [${b}]\n`,
    );
    // Room to open the database, not to record 900 tasks.
    const kb = Math.ceil(statSync(db).size / 1024) + 40;
    const r = await runLimited(kb, ['run', big, '--json'], { HARVEST_DB: db });
    expect(r.code).toBe(3);
    expectOneLine(r.stderr);
    expect(r.stderr).toContain(db);
    expect(JSON.parse(r.stdout).error.code).toMatch(/^STORE_(FULL|IO_ERROR)$/);
  });
});

describe('a database deleted while run --local writes to it', () => {
  it('stops the run with exit 3 saying so, rather than report records stored in a file that is gone', async () => {
    const slow = await startSandbox({ port: 0, latency: { minMs: 150, maxMs: 300 } });
    const dir = path.join(cli.dir, 'deleted');
    mkdirSync(dir);
    const s = testSettings({ dir, prefix: freshPrefix(), apiUrl: slow.url });
    try {
      const n = Array.from({ length: 200 }, (_, i) => i).join(', ');
      const pipeline = path.join(dir, 'p.yaml');
      writeFileSync(
        pipeline,
        `name: gone\nsearches:\n  - matrix:\n      n: [${n}]\n    query: "gone {n}"\n    limit: 1\n`,
      );
      const run = spawnCli(['run', pipeline, '--local', '-c', '4'], s);
      const answered = () => slow.ledger().teams.sandbox?.calls['200'] ?? 0;
      await waitFor('10 calls answered', answered, {
        until: (n) => n >= 10,
        timeoutMs: 30_000,
        intervalMs: 50,
      });
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${s.dbPath}${suffix}`, { force: true });
      expect(await run.exited).toBe(3);
      expect(run.stderr()).toContain('was deleted or replaced while harvest had it open');
      expect(run.stderr()).not.toMatch(/\n\s+at /);
    } finally {
      await slow.close();
      await deletePrefix(s.queuePrefix);
    }
  }, 90_000);
});
