/**
 * `harvest changes` of a large run against its previous one: a run of CHANGES_BENCH_RESULTS
 * results (default 100,000; 10 per search) and the run before it, synthetic rows written to a
 * temp database through the store (about 10% of pages changed, 5% of ranks swapped, 5% of
 * results replaced). Figures: the time to record the run's changes when it finishes (the
 * writer's share), then, in a fresh process, the time and peak RSS of the report (the table of
 * every search and the lists), and of the whole command (`bin/harvest.js changes`, startup
 * included). Targets of the report: 2 s and 300 MB.
 *
 * Run: `npx tsx test/bench/changes.bench.ts` (CHANGES_BENCH_RESULTS=2000 for a smoke run).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Sqlite from 'better-sqlite3';
import { renderChangeReport } from '../../src/report/changes/run-report.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { benchDir, fixed, HARVEST_BIN, mb, printBlock, runBench, verdict } from './lib.ts';

const RESULTS = Number(process.env.CHANGES_BENCH_RESULTS ?? 100_000);
const PER_SEARCH = 10;
const SEARCHES = Math.ceil(RESULTS / PER_SEARCH);
const TASKS_PER_BATCH = 200;

/** Deterministic share test: whether `n` falls in the `share` of `salt`'s draw. */
function drawn(n: number, salt: number, share: number): boolean {
  const x = Math.sin(n * 12.9898 + salt * 78.233) * 43758.5453;
  return x - Math.floor(x) < share;
}

/** The items of search `s` in run `epoch` (0: baseline, 1: the run compared). */
function itemsOf(s: number, epoch: number): Record<string, unknown>[] {
  const slots = Array.from({ length: PER_SEARCH }, (_, p) => s * PER_SEARCH + p);
  if (epoch === 1) {
    for (let p = 0; p + 1 < slots.length; p += 2) {
      if (drawn(slots[p]!, 1, 0.05)) [slots[p], slots[p + 1]] = [slots[p + 1]!, slots[p]!];
    }
  }
  return slots.map((n) => {
    const replaced = epoch === 1 && drawn(n, 2, 0.05);
    const changed = epoch === 1 && drawn(n, 3, 0.1);
    const id = replaced ? `${n}-new` : String(n);
    return {
      url: `https://site-${n % 997}.example/${id}`,
      title: `Page ${id}`,
      description: `About page ${id}`,
      markdown: `# Page ${id}\n\n${'Some prose about the page. '.repeat(10)}${changed ? 'Edited.' : ''}`,
    };
  });
}

function writeRun(store: Store, runId: string, epoch: number, at: number): number {
  const pipelineId = store.pipelines.upsert({
    name: 'bench',
    hash: 'h',
    yamlText: 'name: bench\n',
  });
  store.runs.create({ id: runId, pipelineId, trigger: 'schedule', taskCount: SEARCHES });
  const keys = Array.from({ length: SEARCHES }, (_, s) => `task-${s}`);
  store.tasks.insertMany(
    runId,
    keys.map((key, s) => ({ key, request: { query: `topic ${s}`, limit: PER_SEARCH } })),
  );
  store.runs.setStatus(runId, 'running');
  let lastBatchMs = 0;
  for (let first = 0; first < SEARCHES; first += TASKS_PER_BATCH) {
    const events: unknown[] = [];
    for (let s = first; s < Math.min(SEARCHES, first + TASKS_PER_BATCH); s++) {
      const items = itemsOf(s, epoch).map((item, position) => ({ source: 'web', position, item }));
      const callId = randomUUID();
      events.push(
        {
          type: 'call',
          callId,
          runId,
          taskKey: keys[s],
          attempt: 1,
          startedAt: at,
          durationMs: 100,
          status: 200,
          outcome: 'ok',
          searchId: 's',
          creditsUsed: 2,
        },
        { type: 'results', runId, taskKey: keys[s], callId, searchId: 's', fetchedAt: at, items },
        { type: 'task', runId, taskKey: keys[s], status: 'done', attempts: 1, at },
      );
    }
    const started = performance.now();
    store.applyEvents(events);
    lastBatchMs = performance.now() - started;
  }
  // The last batch finished the run, and recorded its changes after its commit.
  return lastBatchMs;
}

/** Child mode: the report of `runId`, timed, with this process's peak RSS. */
function measureReport(dbPath: string, runId: string): void {
  const store = openStore(dbPath);
  const started = performance.now();
  const text = renderChangeReport(store, { runId, format: 'table' });
  const ms = performance.now() - started;
  const hwm = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  store.close();
  console.log(JSON.stringify({ ms, peakKb: Number(hwm), bytes: text.length }));
}

async function main(): Promise<void> {
  const dir = benchDir('changes');
  const dbPath = path.join(dir, 'harvest.db');
  const store = openStore(dbPath, { synchronous: 'normal' });
  const setupStarted = performance.now();
  writeRun(store, 'bench-r1', 0, Date.UTC(2026, 0, 1));
  const recordMs = writeRun(store, 'bench-r2', 1, Date.UTC(2026, 0, 2));
  const setupMs = performance.now() - setupStarted;
  const totals = store.changes.recorded('bench-r2');
  // Recording alone, again: the run is taken for one finished before changes were recorded.
  const db = new Sqlite(dbPath);
  db.prepare('DELETE FROM change_runs WHERE run_id = ?').run('bench-r2');
  db.close();
  const recordStarted = performance.now();
  store.changes.ensure('bench-r2');
  const recordAloneMs = performance.now() - recordStarted;
  store.close();

  const child = execFileSync(
    process.execPath,
    ['--import', 'tsx', new URL(import.meta.url).pathname, '--report', dbPath, 'bench-r2'],
    { encoding: 'utf8' },
  );
  const report = JSON.parse(child.trim().split('\n').at(-1)!) as { ms: number; peakKb: number };
  const timed = spawnSync(
    '/usr/bin/time',
    ['-f', '%e %M', process.execPath, HARVEST_BIN, 'changes', 'bench-r2', '--out', '/dev/null'],
    { encoding: 'utf8', env: { ...process.env, HARVEST_DB: dbPath } },
  );
  if (timed.status !== 0) throw new Error(`harvest changes failed: ${timed.stderr}`);
  const [cliSeconds, cliKb] = timed.stderr.trim().split('\n').at(-1)!.split(' ').map(Number);

  printBlock(`harvest changes: ${RESULTS} results against the run before`, [
    [
      'changes recorded',
      `new ${totals?.new}, changed ${totals?.changed}, dropped ${totals?.dropped}, moved ${(totals?.movedUp ?? 0) + (totals?.movedDown ?? 0)}`,
    ],
    ['setup (two runs written)', `${fixed(setupMs / 1000, 1)} s`],
    ['last batch + recording at run end', `${fixed(recordMs / 1000, 2)} s`],
    ["recording alone (the run's rows and content hashes)", `${fixed(recordAloneMs / 1000, 2)} s`],
    ['report (fresh process)', `${fixed(report.ms / 1000, 2)} s`, mb(report.peakKb)],
    ['harvest changes (whole command)', `${fixed(cliSeconds ?? 0, 2)} s`, mb(cliKb)],
    [
      'verdict',
      verdict(report.ms <= 2000 && report.peakKb <= 300 * 1024, 'report ≤ 2 s and ≤ 300 MB'),
    ],
  ]);
}

if (process.argv[2] === '--report') measureReport(process.argv[3]!, process.argv[4]!);
else runBench(main);
