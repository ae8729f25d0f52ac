/**
 * Export throughput and memory: `harvest export` (the CLI, in its own process, as users run it)
 * writes every result of a database of N results (default 1,000,000) to a file as JSONL, CSV
 * and Parquet. Anchor, in the same run: the `sqlite3` command-line shell exporting the same rows
 * (the same SELECT, printed by harvest's query builder) to CSV. Prints rows/s of each, harvest's
 * rows/s ÷ the shell's, and harvest's peak RSS (VmRSS of /proc/<pid>/status every 50 ms).
 * Startup (tsx, imports, opening the database) is measured apart with an export of no row and
 * taken out of the rate; the wall time with it is printed too. On a machine shared with other
 * work, wall time says little: the CPU time of each process (user + system, /proc/<pid>/stat,
 * sampled with the RSS) is printed too, with harvest's CPU per row over the shell's.
 *
 * Targets: JSONL and CSV >= 100,000 rows/s, Parquet >= 50,000 rows/s, each < 200 MB RSS.
 *
 * The rows: 10 web results per task with url, title and a ~100-character description; every
 * EXPORT_BENCH_SCRAPED_EVERY-th also scraped (markdown of EXPORT_BENCH_MARKDOWN_BYTES, links,
 * metadata). They are written through the store (`applyEvents`), which takes a while for 1M.
 *
 * Run: `npx tsx test/bench/export.bench.ts` (the sqlite3 shell: `apt-get install sqlite3`).
 * Knobs (env): EXPORT_BENCH_ROWS (default 1,000,000; a multiple of 10), EXPORT_BENCH_SCRAPED_EVERY
 * (default 10), EXPORT_BENCH_MARKDOWN_BYTES (default 2,000), EXPORT_BENCH_FORMATS (default
 * jsonl,csv,parquet), EXPORT_BENCH_DB (a database file: seeded when missing, kept, and reused
 * as it is when present, seeded with the same EXPORT_BENCH_ROWS). Small, to see it work: `EXPORT_BENCH_ROWS=20000 npx tsx test/bench/export.bench.ts`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  buildExportQuery,
  openStore,
  RESULT_COLUMNS,
  SCAN_CACHE_KIB,
  type StoreEvent,
} from '../../src/store/index.ts';
import {
  benchDir,
  fixed,
  HARVEST_BIN,
  mb,
  printBlock,
  type Row,
  readCpuMs,
  readRssKb,
  runBench,
  verdict,
} from './lib.ts';

const ROWS = Number(process.env.EXPORT_BENCH_ROWS ?? 1_000_000);
const SCRAPED_EVERY = Number(process.env.EXPORT_BENCH_SCRAPED_EVERY ?? 10);
const MARKDOWN_BYTES = Number(process.env.EXPORT_BENCH_MARKDOWN_BYTES ?? 2_000);
const FORMATS = (process.env.EXPORT_BENCH_FORMATS ?? 'jsonl,csv,parquet').split(',');
const TARGET_ROWS_PER_S: Record<string, number> = { jsonl: 100_000, csv: 100_000, parquet: 50_000 };
const TARGET_RSS_MB = 200;
const RUN_ID = '20260101T000000-bnch';

function seed(dbPath: string): void {
  const store = openStore(dbPath);
  try {
    const pipelineId = store.pipelines.upsert({ name: 'bench', hash: 'h', yamlText: 'x' });
    const tasks = ROWS / 10;
    store.runs.create({ id: RUN_ID, pipelineId, trigger: 'manual', taskCount: tasks });
    const keys = Array.from({ length: tasks }, (_, i) => `t${String(i).padStart(8, '0')}`);
    store.tasks.insertMany(
      RUN_ID,
      keys.map((key, i) => ({ key, request: { query: `export bench ${i}`, limit: 10 } })),
    );
    const markdown =
      `# Title\n\n${'Words, "quotes" and commas in a paragraph. '.repeat(MARKDOWN_BYTES / 43 + 1)}`.slice(
        0,
        MARKDOWN_BYTES,
      );
    const t0 = Date.UTC(2026, 0, 1);
    let events: StoreEvent[] = [];
    for (const [i, taskKey] of keys.entries()) {
      const callId = randomUUID();
      const items = Array.from({ length: 10 }, (_, position) => {
        const n = i * 10 + position;
        const url = `https://site${n % 997}.example.com/articles/${n}`;
        const item: Record<string, unknown> = {
          url,
          title: `Result ${position} of export bench ${i}`,
          description: `What page ${n} is about, in about a hundred characters, like a search snippet.`,
        };
        if (n % SCRAPED_EVERY === 0) {
          Object.assign(item, {
            markdown,
            links: [`${url}/a`, `${url}/b`],
            metadata: { title: item.title, sourceURL: url, url, statusCode: 200, language: 'en' },
          });
        }
        return { source: 'web' as const, position, item };
      });
      events.push(
        {
          type: 'call',
          callId,
          runId: RUN_ID,
          taskKey,
          attempt: 1,
          startedAt: t0 + i,
          durationMs: 1,
          status: 200,
          outcome: 'ok',
          creditsUsed: 2,
        },
        { type: 'results', runId: RUN_ID, taskKey, callId, fetchedAt: t0 + i, items },
      );
      if (events.length >= 200) {
        store.applyEvents(events);
        events = [];
      }
    }
    if (events.length > 0) store.applyEvents(events);
  } finally {
    store.close();
  }
}

interface Measured {
  seconds: number;
  /** CPU time (user + system) of the process, as last sampled (at most 50 ms before its end). */
  cpuSeconds: number;
  peakRssKb: number | undefined;
  bytes: number;
}

/** Runs a process to completion, sampling its RSS every 50 ms. */
async function measure(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  out?: string,
): Promise<Measured> {
  const started = performance.now();
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', out ? fs.openSync(out, 'w') : 'ignore', 'inherit'],
  });
  let peak: number | undefined;
  let cpuMs = 0;
  const timer = setInterval(() => {
    if (child.pid === undefined) return;
    const kb = readRssKb(child.pid);
    if (kb !== undefined) peak = Math.max(peak ?? 0, kb);
    cpuMs = readCpuMs(child.pid) ?? cpuMs;
  }, 50);
  const [code] = await once(child, 'exit');
  clearInterval(timer);
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${code}`);
  return {
    seconds: (performance.now() - started) / 1000,
    cpuSeconds: cpuMs / 1000,
    peakRssKb: peak,
    bytes: 0,
  };
}

function size(file: string): number {
  return fs.existsSync(file) ? fs.statSync(file).size : 0;
}

runBench(async () => {
  const dir = benchDir('export');
  // EXPORT_BENCH_DB: a database seeded once and kept, for repeated measurements.
  const dbPath = process.env.EXPORT_BENCH_DB ?? path.join(dir, 'harvest.db');
  if (fs.existsSync(dbPath)) {
    console.log(`reusing ${dbPath} (${mb(size(dbPath) / 1024)})`);
  } else {
    console.log(
      `seeding ${ROWS.toLocaleString('en-US')} results (every ${SCRAPED_EVERY}th scraped, ${MARKDOWN_BYTES} B markdown)...`,
    );
    const seeded = performance.now();
    seed(dbPath);
    console.log(
      `seeded in ${fixed((performance.now() - seeded) / 1000, 1)} s; database ${mb(size(dbPath) / 1024)}`,
    );
  }
  const env = { HARVEST_DB: dbPath, HARVEST_DATA_DIR: dir, LOG_LEVEL: 'silent' };

  // The shell, on the same SELECT harvest runs (no filter: every result), with the same cache.
  const reader = openStore(dbPath, { readonly: true });
  const query = buildExportQuery(
    RESULT_COLUMNS,
    { kind: 'results' },
    { withoutMedia: !reader.exports.hasSavedMedia() },
  );
  reader.close();
  const sqlFile = path.join(dir, 'export.sql');
  // The shell has no `harvest_content` (brotli): it reads the stored bytes of compressed
  // content instead, so the anchor leaves out their decompression.
  const shellSql = query.sql.replace(/harvest_content\(([^,()]+), ([^,()]+)\)/g, '$2');
  fs.writeFileSync(sqlFile, `PRAGMA cache_size = -${SCAN_CACHE_KIB};\n${shellSql};\n`);
  const hasShell = spawnSync('sqlite3', ['-version']).status === 0;
  let shellRate: number | undefined;
  let shellCpu: number | undefined;
  const rows: Row[] = [
    ['', 'rows/s', 'wall s', 'peak RSS', 'file', '÷ shell', 'CPU s', 'CPU ÷ shell'],
  ];
  if (hasShell) {
    const out = path.join(dir, 'shell.csv');
    const m = await measure(
      'sh',
      // exec: the process measured is the shell's, not sh's.
      ['-c', `exec sqlite3 -csv -header '${dbPath}' < '${sqlFile}'`],
      {},
      out,
    );
    shellRate = ROWS / m.seconds;
    shellCpu = m.cpuSeconds;
    rows.push([
      'sqlite3 shell, CSV (anchor)',
      fixed(shellRate, 0),
      fixed(m.seconds, 1),
      mb(m.peakRssKb),
      mb(size(out) / 1024),
      '1.00',
      fixed(m.cpuSeconds, 1),
      '1.00',
    ]);
  } else {
    console.log('no sqlite3 shell: the anchor is skipped (apt-get install sqlite3)');
  }

  // Fixed cost of a harvest process: the same export selecting no row.
  const startup = await measure(
    process.execPath,
    [HARVEST_BIN, 'export', '--since', '2999-01-01', '--out', path.join(dir, 'empty.jsonl')],
    env,
  );
  const verdicts: string[] = [];
  for (const format of FORMATS) {
    const out = path.join(dir, `results.${format}`);
    const m = await measure(
      process.execPath,
      [HARVEST_BIN, 'export', '--format', format, '--out', out],
      env,
    );
    const rate = ROWS / Math.max(0.001, m.seconds - startup.seconds);
    const cpu = Math.max(0.001, m.cpuSeconds - startup.cpuSeconds);
    rows.push([
      `harvest export, ${format}`,
      fixed(rate, 0),
      fixed(m.seconds, 1),
      mb(m.peakRssKb),
      mb(size(out) / 1024),
      shellRate === undefined ? '-' : fixed(rate / shellRate, 2),
      fixed(cpu, 1),
      // Rows per CPU second over the shell's: above 1 is less CPU per row than the shell.
      shellCpu === undefined ? '-' : fixed(shellCpu / cpu, 2),
    ]);
    const target = TARGET_ROWS_PER_S[format] ?? 0;
    verdicts.push(
      verdict(
        rate >= target,
        `${format}: ${fixed(rate, 0)} rows/s (target >= ${target.toLocaleString('en-US')})`,
      ),
    );
    verdicts.push(
      verdict(
        (m.peakRssKb ?? 0) / 1024 < TARGET_RSS_MB,
        `${format}: peak RSS ${mb(m.peakRssKb)} (target < ${TARGET_RSS_MB} MB)`,
      ),
    );
    fs.rmSync(out, { force: true });
  }
  printBlock(
    `export of ${ROWS.toLocaleString('en-US')} results (harvest startup ${fixed(startup.seconds, 1)} s, ${fixed(startup.cpuSeconds, 1)} CPU s, taken out of its rates)`,
    rows,
  );
  for (const v of verdicts) console.log(v);
});
