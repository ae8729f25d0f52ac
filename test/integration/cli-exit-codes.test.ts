/**
 * Every command's exit code, from the table in src/cli/exit-codes.ts, through the real binary;
 * errors of the environment as one line without a stack trace; `--json` always JSON; no secret
 * in what is printed.
 */
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.ts';
import { runCli, spawnCli, useCliFixture } from '../helpers/cli.ts';
import { waitFor } from '../helpers/wait.ts';

const GOOD = 'name: good\nsearches:\n  - query: web data\n    limit: 1\n';
const INVALID = 'name: bad\nsearches:\n  - query: 42\n    limt: 1\n';

/** A TCP port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const cli = useCliFixture('cli-exit');
let deadRedis: string;
let deadApi: string;

beforeAll(async () => {
  deadRedis = `redis://:hunter2-secret@127.0.0.1:${await closedPort()}`;
  deadApi = `http://127.0.0.1:${await closedPort()}`;
});

/** One line on stderr that names the problem; never a stack trace. */
function expectOneLine(stderr: string): void {
  expect(stderr).not.toMatch(/\n\s+at /);
  expect(stderr.trim().split('\n')[0]).toMatch(/^harvest: /);
}

describe('exit codes, command by command', () => {
  it('a reader that goes away (| head) ends a command quietly, with its own exit code', async () => {
    for (const args of [
      ['schema'],
      ['--help'],
      ['validate', cli.file('good.yaml', GOOD)],
      ['status'],
    ]) {
      const p = spawnCli(args, cli.settings);
      // The reading end is closed before the command writes: every write then fails (EPIPE).
      p.child.stdout?.destroy();
      expect(await p.exited, args.join(' ')).toBe(0);
      expect(p.stderr(), args.join(' ')).not.toMatch(/EPIPE|\n\s+at /);
    }
  });

  it('--help prints the exit-code table and exits 0; an unknown command exits 2', async () => {
    const help = await runCli(['--help'], cli.settings);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    expect(help.stdout).toMatch(/validate \[options\] <paths\.\.\.>/);
    const unknown = await runCli(['valdate', 'x.yaml'], cli.settings);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('validate');
  });

  it('validate: 0 valid, 1 a problem found (a checker), 2 a missing file, JSON with --json', async () => {
    expect((await runCli(['validate', cli.file('good.yaml', GOOD)], cli.settings)).code).toBe(0);
    const bad = await runCli(['validate', cli.file('bad.yaml', INVALID)], cli.settings);
    expect(bad.code).toBe(1);
    const missing = await runCli(
      ['validate', '--json', path.join(cli.dir, 'nope.yaml')],
      cli.settings,
    );
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stdout)).toMatchObject({
      ok: false,
      error: { code: 'USAGE', exitCode: 2 },
    });
  });

  it('plan and run given an invalid pipeline: 2 (bad input to act on); schema 0', async () => {
    const bad = cli.file('bad.yaml', INVALID);
    const plan = await runCli(['plan', '--json', bad], cli.settings);
    expect(plan.code).toBe(2);
    expect(JSON.parse(plan.stdout).error.code).toBe('PIPELINE_INVALID');
    expect((await runCli(['run', bad], cli.settings)).code).toBe(2);
    expect((await runCli(['run'], cli.settings)).code).toBe(2);
    const workersElsewhere = await runCli(
      ['run', cli.file('good.yaml', GOOD), '-c', '4'],
      cli.settings,
    );
    expect(workersElsewhere.code).toBe(2);
    expect(workersElsewhere.stderr).toContain('-c goes with --local');
    // The demo says so before it starts a sandbox for it.
    const demo = await runCli(['demo', bad], cli.settings);
    expect(demo.code).toBe(2);
    expect(demo.stderr).not.toContain('sandbox listening');
    expect((await runCli(['schema'], cli.settings)).code).toBe(0);
  });

  it('flags out of range exit 2 for worker, export, report, sandbox and dashboard', async () => {
    for (const args of [
      ['worker', '--roles', 'nope'],
      ['export', '--format', 'xml'],
      ['report', 'costs', '--by', 'nope'],
      ['sandbox', '--port', '70000'],
      ['dashboard', '--port', '70000'],
      ['status', '-n', '0'],
    ]) {
      const r = await runCli(args, cli.settings);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
    }
    // Named as the user wrote them, with a suggestion for a near miss.
    const role = await runCli(['worker', '--roles', 'serch'], cli.settings);
    expect(role.stderr).toContain('unknown role "serch"; did you mean "search"?');
    const fault = await runCli(['sandbox', '--faults', '408=2'], cli.settings);
    expect({ code: fault.code, stderr: fault.stderr.trim() }).toEqual({
      code: 2,
      stderr: 'harvest: fault probability 408 must be in 0..1',
    });
  });

  it('report costs --json with another format (by --format or by the --out extension): 2, nothing written', async () => {
    // A database of its own with costs in it (the other tests expect none), so that only the
    // flags can refuse.
    const own = { HARVEST_DB: path.join(cli.dir, 'report-formats.db') };
    expect((await runCli(['run', cli.file('good.yaml', GOOD)], cli.settings, own)).code).toBe(0);
    const page = cli.file('costs.html', 'kept');
    for (const args of [
      ['report', 'costs', '--json', '--out', page],
      ['report', 'costs', '--json', '--format', 'csv'],
    ]) {
      const r = await runCli(args, cli.settings, own);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(JSON.parse(r.stdout).error.message).toContain('ask for two formats');
    }
    expect(readFileSync(page, 'utf8')).toBe('kept');
    // A .json file, or --format json spelled out, is one format.
    const json = path.join(path.dirname(page), 'costs.json');
    expect(
      (await runCli(['report', 'costs', '--json', '--out', json], cli.settings, own)).code,
    ).toBe(0);
    expect(JSON.parse(readFileSync(json, 'utf8'))).toBeTypeOf('object');
  });

  it('status before any run: no runs yet (0); an unknown run or database: 2', async () => {
    const list = await runCli(['status'], cli.settings);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('no runs yet');
    const one = await runCli(['status', 'nope', '--json'], cli.settings);
    expect(one.code).toBe(2);
    expect(JSON.parse(one.stdout).error.code).toBe('STORE_NOT_FOUND');
    expect((await runCli(['media', 'nope'], cli.settings)).code).toBe(2);
  });

  it('cancel of an unknown run: 2', async () => {
    const good = await runCli(['run', cli.file('good.yaml', GOOD)], cli.settings);
    expect(good.code).toBe(0);
    const cancel = await runCli(['cancel', 'nope'], cli.settings);
    expect(cancel.code).toBe(2);
    expect(cancel.stderr).toContain('no run nope');
  });

  it("export and report costs refuse to write over harvest's database: 2, and it survives", async () => {
    expect((await runCli(['run', cli.file('keep.yaml', GOOD)], cli.settings)).code).toBe(0);
    for (const args of [
      ['export', '--format', 'csv', '--out', cli.settings.dbPath],
      ['report', 'costs', '--format', 'csv', '--out', `${cli.settings.dbPath}-wal`],
    ]) {
      const r = await runCli(args, cli.settings);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toContain("it is harvest's database");
      expectOneLine(r.stderr);
    }
    const status = await runCli(['status'], cli.settings);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('good');
  });

  it('Redis or the API out of reach: 3, in one line, the Redis password masked', async () => {
    for (const args of [['schedule', 'ls'], ['worker'], ['demo'], ['cancel', 'x']]) {
      const r = await runCli(args, cli.settings, { REDIS_URL: deadRedis });
      expect({ args, code: r.code }).toEqual({ args, code: 3 });
      expectOneLine(r.stderr);
      expect(r.stderr).toContain('redis://:***@127.0.0.1');
      expect(r.stderr + r.stdout).not.toContain('hunter2-secret');
    }
    const json = await runCli(['schedule', 'ls', '--json'], cli.settings, { REDIS_URL: deadRedis });
    expect(JSON.parse(json.stdout).error).toMatchObject({ code: 'REDIS_UNREACHABLE', exitCode: 3 });
    expect(json.stdout).not.toContain('hunter2-secret');
    const crawls = await runCli(['crawls', 'active'], cli.settings, { HARVEST_API_URL: deadApi });
    expect(crawls.code).toBe(3);
    expectOneLine(crawls.stderr);
  });

  it('the API failing (500 on every try): 3, in one line, as when it is out of reach', async () => {
    const failing = await startSandbox({ port: 0, faults: { error500: 1 } });
    try {
      const r = await runCli(['crawls', 'active', '--json'], cli.settings, {
        HARVEST_API_URL: failing.url,
      });
      expect({ code: r.code, error: JSON.parse(r.stdout).error.code }).toEqual({
        code: 3,
        error: 'SERVER_ERROR',
      });
      expectOneLine(r.stderr);
    } finally {
      await failing.close();
    }
  }, 60_000);

  it('status with Redis out of reach shows SQLite and says Redis is missing, once', async () => {
    const r = await runCli(['status'], cli.settings, { REDIS_URL: deadRedis });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('good');
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^note: Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ is not reachable/),
    ]);
  });

  it('a cli.settings error names the variable and exits 2, secrets scrubbed', async () => {
    const r = await runCli(['status'], cli.settings, {
      HARVEST_API_KEY: 'fc-key with-space',
      HARVEST_PREFIX: 'bad prefix!',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('HARVEST_PREFIX');
    expect(r.stderr).not.toContain('fc-key with-space');
  });

  it('Ctrl-C of run --wait exits 4, as the README says', async () => {
    const child = spawnCli(['run', cli.file('good.yaml', GOOD), '--wait'], cli.settings);
    await waitFor(
      'the run started (its estimate said)',
      () => child.stderr().includes('estimated'),
      {
        intervalMs: 100,
      },
    );
    // A fixed duration: the Ctrl-C is to land while the command follows the run, which it
    // starts without saying so.
    await new Promise((r) => setTimeout(r, 500));
    child.child.kill('SIGINT');
    expect(await child.exited).toBe(4);
  });
});

describe('environment problems: one line, the right code', () => {
  it('a database path that is a directory, not a database, or locked: 3', async () => {
    const dir = path.join(cli.dir, 'a-dir.db');
    mkdirSync(dir, { recursive: true });
    const asDir = await runCli(['status', 'x'], cli.settings, { HARVEST_DB: dir });
    expect(asDir.code).toBe(3);
    expectOneLine(asDir.stderr);
    expect(asDir.stderr).toContain('is a directory');

    const junk = cli.file('junk.db', 'this is not sqlite at all, not even close'.repeat(100));
    const corrupt = await runCli(['status'], cli.settings, { HARVEST_DB: junk });
    expect(corrupt.code).toBe(3);
    expectOneLine(corrupt.stderr);
    expect(corrupt.stderr).toContain('is not a harvest database');

    const lockedPath = path.join(cli.dir, 'locked.db');
    const holder = new Sqlite(lockedPath);
    holder.pragma('journal_mode = DELETE');
    holder.exec('create table t (x); begin exclusive; insert into t values (1);');
    try {
      const locked = await runCli(['status'], cli.settings, { HARVEST_DB: lockedPath });
      expect(locked.code).toBe(3);
      expectOneLine(locked.stderr);
      expect(locked.stderr).toContain('is locked by another process');
    } finally {
      holder.exec('rollback');
      holder.close();
    }
  });

  it.skipIf(process.getuid?.() === 0)('a read-only database: 3', async () => {
    const roDir = path.join(cli.dir, 'ro');
    mkdirSync(roDir);
    const db = path.join(roDir, 'harvest.db');
    expect(
      (await runCli(['run', cli.file('good.yaml', GOOD)], cli.settings, { HARVEST_DB: db })).code,
    ).toBe(0);
    chmodSync(db, 0o444);
    chmodSync(roDir, 0o555);
    try {
      const r = await runCli(['run', cli.file('good.yaml', GOOD)], cli.settings, {
        HARVEST_DB: db,
      });
      expect(r.code).toBe(3);
      expectOneLine(r.stderr);
    } finally {
      chmodSync(roDir, 0o755);
    }
  });

  it('a database folder that cannot be made: 3', async () => {
    const blocker = cli.file('blocker', 'a file where a folder should be');
    const r = await runCli(['run', cli.file('good.yaml', GOOD)], cli.settings, {
      HARVEST_DB: path.join(blocker, 'sub', 'harvest.db'),
    });
    expect(r.code).toBe(3);
    expectOneLine(r.stderr);
  });

  it('sandbox: a port in use 3, an impossible port 2', async () => {
    const port = new URL(cli.sandbox.url).port;
    const inUse = await runCli(['sandbox', '--port', port], cli.settings);
    expect(inUse.code).toBe(3);
    expectOneLine(inUse.stderr);
    expect(inUse.stderr).toContain('is in use');
    const bad = await runCli(['sandbox', '--port', 'http'], cli.settings);
    expect(bad.code).toBe(2);
    expectOneLine(bad.stderr);
  });

  it('pipelines with several documents or deep nesting: validate 1, run 2, no stack', async () => {
    const several = cli.file('several.yaml', `${GOOD}---\n${GOOD}`);
    const deep = cli.file(
      'deep.yaml',
      `name: deep\nsearches: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`,
    );
    for (const f of [several, deep]) {
      const v = await runCli(['validate', f], cli.settings);
      expect(v.code).toBe(1);
      expect(v.stdout).toMatch(/one YAML document|nests too deeply/);
      const r = await runCli(['run', f], cli.settings);
      expect(r.code).toBe(2);
      expectOneLine(r.stderr);
    }
  });
});
