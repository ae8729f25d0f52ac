/**
 * The edges of `harvest export` and `harvest report costs` output: what `--out` writes into (a
 * FIFO, a symbolic link, a device, a socket), stdout that fails, CSV cells a spreadsheet would
 * run, partial files of an export killed outright, and the refusals of paths, extensions and
 * fields. The binary runs in its own process against a database seeded here: both commands
 * only read SQLite, so no Redis or API is involved.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import { BIN } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../helpers/wait.ts';
import { callEvent, resultsEvent, seedRun, webItem } from '../unit/store/helpers.ts';

const FORMULAS = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", '@SUM(1)', '-2+3'];

interface Cli {
  code: number | null;
  stdout: string;
  stderr: string;
}

const tmp = tempDir('harvest-outputs');
const dir = tmp.dir;
const dbPath = path.join(dir, 'harvest.db');

/** Seeds `file`: a run of `rows` results (titles with formulas first) and a call for costs. */
function seed(file: string, rows: number, pipeline = '=cost-pipeline'): void {
  const store = openStore(file);
  try {
    const tasks = Math.ceil(rows / 10);
    const { runId, keys } = seedRun(store, { runId: 'run-1', pipeline, taskCount: tasks });
    const events = keys.map((key, t) => {
      const items = Array.from({ length: 10 }, (_, i) => {
        const n = t * 10 + i;
        return webItem(n, { title: FORMULAS[n] ?? `Page ${n}`, description: 'd'.repeat(200) });
      });
      return resultsEvent(runId, key, items);
    });
    for (let i = 0; i < events.length; i += 500) store.applyEvents(events.slice(i, i + 500));
    store.applyEvents([callEvent(runId, keys[0]!, { creditsUsed: 3 })]);
  } finally {
    store.close();
  }
}

/** Runs the binary; `stdout`: a descriptor to give it (`/dev/full`) instead of a pipe. */
function spawnHarvest(args: string[], stdout?: number, db = dbPath): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH, HARVEST_DB: db, HARVEST_DATA_DIR: dir, LOG_LEVEL: 'silent' },
    cwd: dir,
    stdio: ['ignore', stdout ?? 'pipe', 'pipe'],
  });
}

async function harvest(args: string[], stdout?: number): Promise<Cli> {
  const child = spawnHarvest(args, stdout);
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout: out, stderr: err };
}

/** A fresh folder under the test's own. */
function folder(name: string): string {
  const made = path.join(dir, name);
  fs.mkdirSync(made);
  return made;
}

const stdoutOf = new Map<string, Promise<Cli>>();
/** What the export (or report) writes to stdout: what every other destination must receive. */
async function expected(args: string[]): Promise<string> {
  const key = args.join(' ');
  if (!stdoutOf.has(key)) stdoutOf.set(key, harvest(args));
  const plain = await stdoutOf.get(key)!;
  expect(plain.code, plain.stderr).toBe(0);
  return plain.stdout;
}

beforeAll(() => seed(dbPath, 40));
afterAll(() => tmp.remove());

describe('--out writes into what is there', () => {
  it('a FIFO: its reader gets every byte and the FIFO stays (export, report costs)', async () => {
    const at = folder('fifo');
    for (const args of [
      ['export', '--format', 'csv'],
      ['report', 'costs', '--format', 'csv'],
    ]) {
      const fifo = path.join(at, 'out');
      expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
      const copy = path.join(at, 'copy');
      const fd = fs.openSync(copy, 'w');
      const reader = spawn('cat', [fifo], { stdio: ['ignore', fd, 'ignore'] });
      fs.closeSync(fd);
      let readerCode: number | null | undefined;
      reader.once('exit', (code) => {
        readerCode = code;
      });
      try {
        const cli = await harvest([...args, '--out', fifo]);
        expect(cli.code, cli.stderr).toBe(0);
        // Renamed over, the FIFO would leave its reader waiting for ever.
        await waitFor(`the reader of the FIFO (${args.join(' ')}) to reach its end`, () =>
          readerCode === undefined ? undefined : { code: readerCode },
        );
        expect(readerCode).toBe(0);
        expect(fs.readFileSync(copy, 'utf8')).toBe(await expected(args));
        expect(fs.lstatSync(fifo).isFIFO()).toBe(true);
        expect(fs.readdirSync(at).sort()).toEqual(['copy', 'out']);
      } finally {
        reader.kill();
        fs.rmSync(fifo, { force: true });
      }
    }
  });

  it('a symbolic link: the file it names is written, the link stays (export, report costs)', async () => {
    const at = folder('links');
    fs.mkdirSync(path.join(at, 'real'));
    fs.writeFileSync(path.join(at, 'real', 'results.jsonl'), 'older\n');
    fs.symlinkSync(path.join('real', 'results.jsonl'), path.join(at, 'results.jsonl'));
    // A link to a file not made yet, in another folder.
    fs.symlinkSync(path.join(at, 'real', 'costs.csv'), path.join(at, 'costs.csv'));
    const exported = await harvest(['export', '--out', path.join(at, 'results.jsonl')]);
    expect(exported.code, exported.stderr).toBe(0);
    const report = await harvest(['report', 'costs', '--out', path.join(at, 'costs.csv')]);
    expect(report.code, report.stderr).toBe(0);
    for (const name of ['results.jsonl', 'costs.csv']) {
      expect(fs.lstatSync(path.join(at, name)).isSymbolicLink(), name).toBe(true);
    }
    expect(fs.readFileSync(path.join(at, 'real', 'results.jsonl'), 'utf8')).toBe(
      await expected(['export']),
    );
    expect(fs.readFileSync(path.join(at, 'real', 'costs.csv'), 'utf8')).toBe(
      await expected(['report', 'costs', '--format', 'csv']),
    );
    expect(fs.readdirSync(path.join(at, 'real')).sort()).toEqual(['costs.csv', 'results.jsonl']);
  });

  it('a character device stays one: written into (null), or failing with exit 3 (full)', async () => {
    const at = folder('devices');
    // Nodes of our own where allowed (root): a regression then replaces them, not /dev's.
    const own = (name: string, minor: string) => {
      const node = path.join(at, name);
      return spawnSync('mknod', [node, 'c', '1', minor]).status === 0 ? node : undefined;
    };
    const ownNull = own('null', '3');
    const ownFull = own('full', '7');
    const cases = [
      ['export', '--out', ownNull ?? '/dev/null'],
      ['report', 'costs', '--out', ownNull ?? '/dev/null'],
      // /dev/null itself only once a node of our own stayed a device.
      ...(ownNull ? [['export', '--out', '/dev/null']] : []),
    ];
    for (const args of cases) {
      const cli = await harvest(args);
      expect(cli.code, `${args.join(' ')}: ${cli.stderr}`).toBe(0);
      expect(fs.lstatSync(args.at(-1)!).isCharacterDevice(), args.join(' ')).toBe(true);
    }
    const full = ownFull ?? '/dev/full';
    const failed = await harvest(['export', '--out', full]);
    expect(failed.code).toBe(3);
    expect(failed.stderr).toBe(`harvest: cannot write ${full}: no space left on device (ENOSPC)\n`);
    expect(fs.lstatSync(full).isCharacterDevice()).toBe(true);
  });

  it('a socket: connected to, its listener gets every byte', async () => {
    const at = folder('socket');
    const socketPath = path.join(at, 'export.sock');
    const received: Buffer[] = [];
    let ended = false;
    const server = net.createServer((connection) => {
      connection.on('data', (d: Buffer) => received.push(d));
      connection.once('end', () => {
        ended = true;
      });
    });
    server.listen(socketPath);
    await once(server, 'listening');
    try {
      const cli = await harvest(['export', '--format', 'csv', '--out', socketPath]);
      expect(cli.code, cli.stderr).toBe(0);
      await waitFor('the listener of the socket to get the end of the export', () => ended);
      expect(Buffer.concat(received).toString()).toBe(
        await expected(['export', '--format', 'csv']),
      );
      expect(fs.lstatSync(socketPath).isSocket()).toBe(true);
    } finally {
      server.close();
    }
  });
});

describe('stdout', () => {
  it('that fails (a full disk): one line and exit 3, for export and report costs', async () => {
    for (const args of [
      ['export', '--format', 'jsonl'],
      ['report', 'costs', '--format', 'html'],
      ['export', '--json', '--out', path.join(dir, 'summary.jsonl')],
    ]) {
      const full = fs.openSync('/dev/full', 'w');
      try {
        const cli = await harvest(args, full);
        expect(cli.code, args.join(' ')).toBe(3);
        expect(cli.stderr, args.join(' ')).toBe(
          'harvest: cannot write to stdout: no space left on device (ENOSPC)\n',
        );
      } finally {
        fs.closeSync(full);
      }
    }
  });

  it('whose reader went away (EPIPE) ends the export quietly, exit 0', async () => {
    const child = spawnHarvest(['export', '--format', 'csv']);
    child.stdout?.destroy();
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const [code] = await once(child, 'close');
    expect(code).toBe(0);
    expect(stderr).toBe('');
  });
});

describe('CSV cells a spreadsheet would run', () => {
  it("get a leading ' by default, and stay as they are with --csv-raw", async () => {
    const args = ['export', '--format', 'csv', '--fields', 'position,title'];
    const safe = parseCsv((await expected(args)).trim(), { columns: true });
    expect(safe.slice(0, 5)).toEqual([
      ...FORMULAS.map((title, i) => ({ position: String(i), title: `'${title}` })),
      { position: '4', title: 'Page 4' },
    ]);
    const raw = parseCsv((await expected([...args, '--csv-raw'])).trim(), {
      columns: true,
    }) as { title: string }[];
    expect(raw.slice(0, 4).map((r) => r.title)).toEqual(FORMULAS);

    const costs = ['report', 'costs', '--format', 'csv'];
    const [safeCost] = parseCsv(await expected(costs), { columns: true });
    expect(safeCost).toMatchObject({ pipeline: "'=cost-pipeline", credits: '3' });
    const [rawCost] = parseCsv(await expected([...costs, '--csv-raw']), { columns: true });
    expect(rawCost).toMatchObject({ pipeline: '=cost-pipeline', credits: '3' });
  });

  it('--csv-raw with another format is refused', async () => {
    for (const args of [
      ['export', '--format', 'jsonl', '--csv-raw'],
      ['report', 'costs', '--csv-raw'],
    ]) {
      const cli = await harvest(args);
      expect(cli.code, args.join(' ')).toBe(2);
      expect(cli.stderr).toMatch(
        /^harvest: --csv-raw applies to CSV only \(the format is \w+\)\n$/,
      );
      expect(cli.stdout).toBe('');
    }
  });
});

describe('partial files', () => {
  it('of an export killed with SIGKILL are removed by the next export to that folder', async () => {
    const bigDb = path.join(dir, 'big.db');
    seed(bigDb, 30_000, 'big');
    const at = folder('killed');
    const child = spawnHarvest(
      ['export', '--format', 'parquet', '--out', path.join(at, 'big.parquet')],
      undefined,
      bigDb,
    );
    const exited = once(child, 'exit');
    const partial = await waitFor(
      'the export to open its partial file',
      () => fs.readdirSync(at).find((name) => name.endsWith('.partial')),
      { intervalMs: 5 },
    );
    child.kill('SIGKILL');
    const [, signal] = await exited;
    expect(signal).toBe('SIGKILL');
    expect(fs.readdirSync(at)).toEqual([partial]);

    const next = await harvest(['export', '--of', 'tasks', '--out', path.join(at, 'tasks.csv')]);
    expect(next.code, next.stderr).toBe(0);
    expect(fs.readdirSync(at)).toEqual(['tasks.csv']);
  });
});

describe('refusals', () => {
  it('report costs --out with an extension it cannot write: exit 2, naming what it can', async () => {
    const out = path.join(dir, 'costs.pdf');
    const cli = await harvest(['report', 'costs', '--out', out]);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toBe(
      'harvest: cannot write a .pdf report: report costs writes table (.txt), json (.json), csv (.csv), html (.html, .htm); name --out so, or give --format\n',
    );
    expect(fs.existsSync(out)).toBe(false);
    // The format asked for: written under any name.
    const asked = await harvest(['report', 'costs', '--format', 'csv', '--out', out]);
    expect(asked.code, asked.stderr).toBe(0);
    expect(fs.readFileSync(out, 'utf8')).toBe(
      await expected(['report', 'costs', '--format', 'csv']),
    );
  });

  it('export --out with an extension that names no format: exit 2, not JSONL under that name', async () => {
    const out = path.join(dir, 'results.xlsx');
    const cli = await harvest(['export', '--out', out]);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toBe(
      'harvest: cannot write a .xlsx export: export writes jsonl (.jsonl, .ndjson), csv (.csv), parquet (.parquet); name --out so, or give --format\n',
    );
    expect(fs.existsSync(out)).toBe(false);
    const asked = await harvest(['export', '--format', 'csv', '--out', out]);
    expect(asked.code, asked.stderr).toBe(0);
    expect(fs.readFileSync(out, 'utf8')).toBe(await expected(['export', '--format', 'csv']));
    // No extension at all (a device, a FIFO, a plain name): JSONL.
    const plain = path.join(dir, 'results');
    expect((await harvest(['export', '--out', plain])).code).toBe(0);
    expect(fs.readFileSync(plain, 'utf8')).toBe(await expected(['export']));
  });

  it('--fields "" is refused, not read as every field', async () => {
    const cli = await harvest(['export', '--fields', '']);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(/^harvest: --fields names no column: list at least one/);
    expect(cli.stdout).toBe('');
  });

  it('--out in a folder that takes no file (/proc) says so, not "its folder does not exist"', async () => {
    for (const args of [['export'], ['report', 'costs']]) {
      const cli = await harvest([...args, '--out', '/proc/x.csv']);
      expect(cli.code).toBe(2);
      expect(cli.stderr).toBe(
        'harvest: cannot write /proc/x.csv: /proc does not take new files (ENOENT)\n',
      );
    }
  });
});
