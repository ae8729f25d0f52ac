/**
 * `harvest export` end to end: real runs against the sandbox (port 0, fresh Redis prefix, temp
 * SQLite), exported by the CLI binary, read back by independent readers.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveFields } from '../../src/report/export/fields.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { expected, readBack } from '../helpers/export-readers.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';

const BIN = path.resolve('bin/harvest.js');

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

interface Cli {
  code: number | null;
  stdout: string;
  stderr: string;
}

function harvest(harness: Harness, args: string[]): Promise<Cli> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: {
        PATH: process.env.PATH,
        HARVEST_DB: harness.settings.dbPath,
        HARVEST_DATA_DIR: harness.dir,
        LOG_LEVEL: 'silent',
      },
      // Its own folder: a file a bug writes by a relative name lands there, not in the checkout.
      cwd: harness.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function runPipeline(harness: Harness, name: string, yaml: string): Promise<string> {
  const file = harness.writePipeline(name, yaml);
  const { runId } = await startRun(harness.runtime, file, { logger: harness.logger });
  const final = await waitForRun(harness.runtime, runId, { pollMs: 50 });
  expect(final.status).toBe('completed');
  return runId;
}

const MIXED = `
name: it-export
defaults:
  limit: 4
searches:
  - id: plain
    query: "vector databases"
  - id: news
    query: "open source llm"
    sources: [web, news]
  - id: scraped
    query: "sqlite wal mode"
    scrapeOptions:
      formats: [markdown, links]
`;

function queries(list: string[]): string {
  return `name: it-new\ndefaults:\n  limit: 5\nsearches:\n${list.map((q) => `  - query: "${q}"`).join('\n')}\n`;
}

describe('harvest export', () => {
  it('exports a real run in every format, as the store has it', async () => {
    h = await startHarness();
    await h.startPool();
    const runId = await runPipeline(h, 'mixed', MIXED);
    const columns = resolveFields('results');
    const want = expected(h.runtime.store, { kind: 'results', runId }, columns);
    expect(want.length).toBeGreaterThan(8);
    expect(want.some((r) => r.source === 'news')).toBe(true);
    expect(want.some((r) => typeof r.markdown === 'string' && r.links !== null)).toBe(true);

    const harness = h;
    const results = await Promise.all(
      (['jsonl', 'csv', 'parquet'] as const).map(async (format) => {
        const out = path.join(harness.dir, `results.${format}`);
        // Parquet's summary as JSON, for machines.
        const json = format === 'parquet' ? ['--json'] : [];
        const cli = await harvest(harness, ['export', '--run', runId, '--out', out, ...json]);
        return { format, out, cli };
      }),
    );
    for (const { format, out, cli } of results) {
      expect(cli.stderr).toBe('');
      expect(cli.code).toBe(0);
      if (format === 'parquet') {
        expect(JSON.parse(cli.stdout)).toMatchObject({ ok: true, rows: want.length, out });
      } else {
        expect(cli.stdout).toContain(`exported ${want.length} results (${columns.length} columns)`);
      }
      expect(await readBack(format, out, columns)).toEqual(want);
    }

    // To stdout, so it pipes: one JSON object per line.
    const piped = await harvest(h, ['export', '--run', runId, '--fields', 'url,source']);
    expect(piped.code).toBe(0);
    const lines = piped.stdout.trimEnd().split('\n');
    expect(lines.map((l) => JSON.parse(l))).toEqual(
      want.map((r) => ({ url: r.url, source: r.source })),
    );
  });

  it('--only-new after two runs whose results partly change', async () => {
    h = await startHarness();
    await h.startPool();
    const first = await runPipeline(h, 'v1', queries(['alpha rockets', 'beta gardens']));
    const second = await runPipeline(h, 'v2', queries(['beta gardens', 'gamma rivers']));
    const store = h.runtime.store;
    const urlsOf = (runId: string) => [...store.iterateResults(runId)].map((r) => r.url);
    const seenBefore = new Set(urlsOf(first));
    const newInSecond = urlsOf(second).filter((u) => !seenBefore.has(u));
    // The overlap is real: some of the second run's URLs are new, some are not.
    expect(newInSecond.length).toBeGreaterThan(0);
    expect(newInSecond.length).toBeLessThan(urlsOf(second).length);

    const latest = await harvest(h, [
      'export',
      '--pipeline',
      'it-new',
      '--only-new',
      '--fields',
      'run_id,url,first_seen_run',
    ]);
    expect(latest.code).toBe(0);
    const rows = latest.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => r.url)).toEqual(newInSecond);
    expect(new Set(rows.map((r) => r.run_id))).toEqual(new Set([second]));
    expect(new Set(rows.map((r) => r.first_seen_run))).toEqual(new Set([second]));

    // Counting from the first run, every URL of both runs is new, once each with --unique-urls.
    const all = await harvest(h, [
      'export',
      '--pipeline',
      'it-new',
      '--only-new',
      '--since-run',
      first,
      '--unique-urls',
      '--fields',
      'url',
      '--format',
      'csv',
    ]);
    expect(all.code).toBe(0);
    const urls = all.stdout.trimEnd().split('\r\n').slice(1);
    expect(new Set(urls)).toEqual(new Set([...urlsOf(first), ...urlsOf(second)]));
    expect(urls.length).toBe(new Set(urls).size);
  });

  it('--out - writes to stdout, as no --out does (export and report costs)', async () => {
    h = await startHarness();
    await h.startPool();
    const runId = await runPipeline(h, 'dash', queries(['stdout please']));
    const plain = await harvest(h, ['export', '--run', runId]);
    const dash = await harvest(h, ['export', '--run', runId, '--out', '-']);
    expect(dash.code).toBe(0);
    expect(dash.stdout).toBe(plain.stdout);
    expect(dash.stdout.trim().split('\n').length).toBeGreaterThan(0);
    const report = await harvest(h, ['report', 'costs', '--format', 'csv', '--out', '-']);
    expect(report.code).toBe(0);
    expect(report.stdout).toContain('credits');
    expect(fs.existsSync(path.join(h.dir, '-'))).toBe(false);
  });

  it('refuses bad input with a clear message and exit 2, leaving no partial file', async () => {
    // Every check comes before a row is read: the (empty) database of the harness will do.
    h = await startHarness();
    const outDir = path.join(h.dir, 'out');
    fs.mkdirSync(outDir);
    const out = path.join(outDir, 'x.csv');
    const cases: [string[], string][] = [
      [['--run', 'no-such-run', '--out', out], 'no run no-such-run'],
      [['--pipeline', 'no-such-pipeline', '--out', out], 'no pipeline no-such-pipeline'],
      [['--fields', 'url,titel', '--out', out], 'did you mean "title"?'],
      [['--out', path.join(outDir, 'missing', 'x.csv')], 'its folder does not exist'],
      [['--out', outDir], 'it is a folder'],
    ];
    const harness = h;
    const answers = await Promise.all(cases.map(([args]) => harvest(harness, ['export', ...args])));
    answers.forEach((cli, i) => {
      const [, message] = cases[i]!;
      expect(cli.code, message).toBe(2);
      expect(cli.stderr).toContain(message);
      expect(cli.stderr).not.toMatch(/^\s+at /m);
      expect(cli.stdout).toBe('');
    });
    expect(fs.readdirSync(outDir)).toEqual([]);
  });
});
