/**
 * A data folder that cannot be written (an archived dataset on a read-only mount): `status`,
 * `export`, `report` and `media verify` read it and say so in one line on stderr, with the same
 * answers as from the writable folder, leaving nothing behind; `run` and `worker` refuse it in
 * one line. The folder is made read-only for real: a read-only bind mount (root may remount),
 * else a folder of mode 555 and the binary run without root's power to write anywhere
 * (setpriv); skipped, saying so, where neither can be had.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Settings } from '../../src/config.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.ts';
import { BIN, cliEnv, runCli } from '../helpers/cli.ts';
import { deletePrefix, freshPrefix } from '../helpers/redis.ts';
import { testSettings } from '../helpers/settings.ts';
import { tempDir } from '../helpers/tmp.ts';

const base = tempDir('read-only-data');
const view = tempDir('read-only-view');
/** TMPDIR of the commands: where a read copy is made, and must not stay. */
const copies = tempDir('read-only-copies');
const DATA = path.join(base.dir, 'data');
const ARCHIVE = path.join(base.dir, 'archive');

const isRoot = process.getuid?.() === 0;
const canSetpriv = isRoot && spawnSync('setpriv', ['--version']).status === 0;

/** How the folders are made read-only here: `mount`, `setpriv`, or none (skipped). */
let how: 'mount' | 'setpriv' | undefined;
let sandbox: RunningSandbox | undefined;
let settings: Settings;
let runId: string;

function tryMount(): boolean {
  if (!isRoot) return false;
  if (spawnSync('mount', ['--bind', base.dir, view.dir]).status !== 0) return false;
  if (spawnSync('mount', ['-o', 'remount,ro,bind', view.dir]).status === 0) return true;
  spawnSync('umount', [view.dir]);
  return false;
}

/**
 * The binary with `args`, pointed at the read-only view of `folder` (DATA by default), or at
 * the writable folder itself.
 */
function harvest(args: string[], folder = DATA, readOnly = true) {
  const where = readOnly ? readOnlyData(folder) : folder;
  const env = cliEnv(settings, {
    HARVEST_DATA_DIR: where,
    HARVEST_DB: path.join(where, 'harvest.db'),
    TMPDIR: copies.dir,
  });
  const command = [process.execPath, BIN, ...args];
  // Without the capabilities that let root write (and read) anything: a mode-555 folder
  // refuses it as it refuses other users.
  const caps = '-dac_override,-dac_read_search,-fowner';
  const [file, ...rest] =
    how === 'setpriv' && readOnly
      ? ['setpriv', `--inh-caps=${caps}`, `--bounding-set=${caps}`, ...command]
      : command;
  const result = spawnSync(file as string, rest, {
    env,
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 1 << 28,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The data folder as the read-only commands see it. */
function readOnlyData(folder = DATA): string {
  return how === 'mount' ? path.join(view.dir, path.basename(folder)) : folder;
}

/**
 * Copies of the run's results, at further positions: an export of more than a few thousand
 * rows is read in pages by reader threads, which open the database themselves.
 */
const RESULT_COPIES = 4000;

function copyResults(db: Sqlite.Database, copies: number): void {
  const columns = (db.pragma('table_info(results)') as { name: string }[]).map((c) => c.name);
  const values = columns.map((c) => (c === 'position' ? 'position + n * 1000' : c));
  db.exec(
    `WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < ${copies})
     INSERT INTO results (${columns.join(', ')})
     SELECT ${values.join(', ')} FROM results CROSS JOIN k`,
  );
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  mkdirSync(DATA);
  mkdirSync(ARCHIVE);
  settings = testSettings({ dir: DATA, prefix: freshPrefix(), apiUrl: sandbox.url });
  const file = path.join(base.dir, 'p.yaml');
  writeFileSync(
    file,
    'name: it-read-only\nsearches:\n  - query: "read only"\n    limit: 3\n    scrapeOptions:\n' +
      '      formats: [markdown, screenshot]\nmedia:\n  screenshot: true\n',
  );
  // Not spawnSync: the sandbox answers from this process.
  const run = await runCli(['run', file, '--local', '--json'], settings);
  expect(run.code, run.stderr).toBe(0);
  runId = (JSON.parse(run.stdout) as { runId: string }).runId;
  const writer = new Sqlite(path.join(DATA, 'harvest.db'));
  copyResults(writer, RESULT_COPIES);
  // An archive of a live folder: the database and its -wal, whose last change (a status only
  // it holds) is not checkpointed into the database; no -shm.
  writer.pragma('wal_autocheckpoint = 0');
  writer.prepare("UPDATE runs SET status = 'cancelled' WHERE id = ?").run(runId);
  copyFileSync(path.join(DATA, 'harvest.db'), path.join(ARCHIVE, 'harvest.db'));
  copyFileSync(path.join(DATA, 'harvest.db-wal'), path.join(ARCHIVE, 'harvest.db-wal'));
  writer.prepare("UPDATE runs SET status = 'completed' WHERE id = ?").run(runId);
  writer.close();

  if (tryMount()) how = 'mount';
  else if (canSetpriv) {
    how = 'setpriv';
    chmodSync(DATA, 0o555);
    chmodSync(ARCHIVE, 0o555);
  }
}, 60_000);

afterAll(async () => {
  if (how === 'mount') spawnSync('umount', [view.dir]);
  if (how === 'setpriv') {
    chmodSync(DATA, 0o755);
    chmodSync(ARCHIVE, 0o755);
  }
  await sandbox?.close();
  if (settings) await deletePrefix(settings.queuePrefix);
  for (const t of [view, base, copies]) t.remove();
});

/** Read copies left in the commands' temp folder (tsx keeps its cache there too). */
function copiesLeft(): string[] {
  return readdirSync(copies.dir).filter((name) => name.startsWith('harvest-readonly-'));
}

const COPY_NOTICE = /^harvest: \S+ is read-only: reading a private copy of the database \(/;

describe('a read-only data folder', () => {
  it('status, export, report and media verify read it, saying so in one line, as from the writable folder', (ctx) => {
    if (!how) ctx.skip('neither a read-only bind mount nor setpriv is available here');
    const checks: string[][] = [
      ['status'],
      ['status', runId, '--json'],
      ['export', '--format', 'jsonl'],
      ['export', '--format', 'csv', '--fields', 'url,title,position'],
      ['export', '--of', 'calls', '--format', 'csv'],
      ['report', 'costs', '--format', 'json'],
      ['media', 'verify', '--json'],
    ];
    // The read-only view first: a command reading the writable folder leaves the -wal and -shm
    // of its read-only connection there (SQLite's way), and the view would see them.
    const readOnly = checks.map((args) => {
      const out = harvest(args);
      // The copy was removed once open: nothing is left in the temp folder.
      expect(copiesLeft(), args.join(' ')).toEqual([]);
      return out;
    });
    checks.forEach((args, i) => {
      const writable = harvest(args, DATA, false);
      const out = readOnly[i]!;
      const what = args.join(' ');
      expect(writable.code, `${what}: ${writable.stderr}`).toBe(0);
      expect(out.code, `${what}: ${out.stderr}`).toBe(0);
      // The same answer, but for the folder's name and the time of the report.
      const same = (text: string) => text.replace(/"generatedAt": "[^"]*"/, '"generatedAt": ""');
      expect(same(out.stdout), what).toBe(same(writable.stdout.replaceAll(DATA, readOnlyData())));
      const lines = out.stderr.trim().split('\n');
      expect(lines, what).toHaveLength(1);
      expect(lines[0], what).toMatch(COPY_NOTICE);
    });
    const verify = JSON.parse(harvest(['media', 'verify', '--json']).stdout) as {
      files: number;
      problems: unknown[];
    };
    expect(verify.problems).toEqual([]);
    expect(verify.files).toBeGreaterThan(0);
    // Enough rows for the paged export, which reads in threads from the writable folder.
    expect(readOnly[2]!.stdout.split('\n').length).toBeGreaterThan(10_000);
  }, 120_000);

  it('an archive with a -wal is read with what its -wal holds', (ctx) => {
    if (!how) ctx.skip('neither a read-only bind mount nor setpriv is available here');
    const out = harvest(['status', runId, '--json'], ARCHIVE);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toMatch(COPY_NOTICE);
    expect((JSON.parse(out.stdout) as { run: { status: string } }).run.status).toBe('cancelled');
    expect(copiesLeft()).toEqual([]);
  });

  it('with a writer that has it open (its -wal and -shm there), it is read in place', (ctx) => {
    if (!how) ctx.skip('neither a read-only bind mount nor setpriv is available here');
    const writer = new Sqlite(path.join(DATA, 'harvest.db'));
    try {
      writer.prepare('SELECT COUNT(*) FROM runs').get();
      const out = harvest(['status']);
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout).toContain(runId);
      expect(out.stderr.trim()).toMatch(
        /^harvest: \S+ is read-only: reading the database in place, read-only$/,
      );
    } finally {
      writer.close();
    }
  });

  it('run and worker, which write, refuse it in one line naming the read-only folder (exit 3)', (ctx) => {
    if (!how) ctx.skip('neither a read-only bind mount nor setpriv is available here');
    const file = path.join(base.dir, 'p.yaml');
    for (const args of [
      ['run', file],
      ['worker', '--roles', 'store'],
    ]) {
      const out = harvest(args);
      const what = args.join(' ');
      expect(out.code, `${what}: ${out.stderr}`).toBe(3);
      expect(out.stderr.trim().split('\n'), what).toHaveLength(1);
      expect(out.stderr, what).toContain(`its folder ${readOnlyData()} is read-only`);
    }
  });
});
