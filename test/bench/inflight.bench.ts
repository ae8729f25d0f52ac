/**
 * Thousands of calls in flight: searches that take seconds, as real ones with scraping do.
 * A sandbox child answers each search after 2-5 s (uniform, mean 3.5 s); harvest runs N
 * one-result searches at a total concurrency C, as
 *   A. one `harvest worker -c C` (search and store roles), and
 *   B. four `harvest worker --roles search -c C/4` beside one store-only worker,
 * each fed by `harvest run FILE --wait`. The ideal throughput of C slots is C / 3.5 s; the
 * baseline, measured in the same run against the same sandbox, is a plain undici client keeping
 * C requests in flight. Throughput is taken from the stored calls: in the steady state (between
 * the times 10% and 90% of the calls had ended, where C / mean latency applies; the verdict),
 * with the mean number of calls in flight and their mean duration beside it to tell a pool that
 * is not kept full from calls that take longer; and from the first call's start to the last
 * call's end, ramp-up and the last wave's drain included.
 *
 * Targets: throughput / ideal >= 0.95; each worker's RSS <= 400 MB and flat (its peak while the
 * last part of the run ended, 60% to 95% of the calls, no more than 1.25 times its peak while
 * 25% to 60% ended); event-loop delay p99 <= 50 ms (the worker's
 * Prometheus metrics, `harvest_nodejs_eventloop_lag_p99_seconds`, from perf_hooks'
 * monitorEventLoopDelay, reset at every scrape: the worst 2 s interval is reported).
 *
 * Run: `npm run bench -- inflight`
 * Knobs (env): N (searches, default 20,000), CONCURRENCY (total, default 1,000), BASELINE_N
 * (default N / 4), LAYOUTS (which layouts to run: `A`, `B` or `A,B`, the default).
 */
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { Pool } from 'undici';
import { openStore } from '../../src/store/index.ts';
import { freePort } from '../helpers/ports.ts';
import {
  benchDir,
  benchEnv,
  benchPrefix,
  fixed,
  forwardStderr,
  HARVEST_BIN,
  matrixPipeline,
  mb,
  printBlock,
  readRssKb,
  runBench,
  SANDBOX_KEY,
  type SandboxChild,
  spawnNode,
  startSandboxChild,
  verdict,
  waitForOutput,
} from './lib.ts';

const N = Number(process.env.N ?? 20_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 1000);
const BASELINE_N = Number(process.env.BASELINE_N ?? Math.round(N / 4));
const MEAN_LATENCY_S = 3.5;
const IDEAL_PER_S = CONCURRENCY / MEAN_LATENCY_S;
const MIN_RATIO = 0.95;
const MAX_RSS_MB = 400;
const MAX_GROWTH = 1.25;
const MAX_LAG_P99_MS = 50;
const SCRAPE_MS = 2000;

/** A plain client: C requests in flight over C connections until `n` have been answered. */
async function baseline(sandbox: SandboxChild, n: number): Promise<number> {
  const pool = new Pool(sandbox.url, { connections: CONCURRENCY });
  let next = 0;
  const t0 = performance.now();
  async function slot(): Promise<void> {
    while (next < n) {
      const i = next++;
      const res = await pool.request({
        method: 'POST',
        path: '/v2/search',
        headers: { authorization: `Bearer ${SANDBOX_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: `baseline ${i}`, limit: 1 }),
      });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`baseline call answered ${res.statusCode}`);
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, slot));
  const perS = n / ((performance.now() - t0) / 1000);
  await pool.close();
  return perS;
}

interface WorkerProbe {
  label: string;
  pid: number;
  metricsUrl: string;
  /** RSS in kB by the fraction of the run ended when it was read. */
  rss: { ended: number; kb: number }[];
  lagP99Ms: number[];
}

async function scrapeLagMs(url: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(url)).text();
    const m = /^harvest_nodejs_eventloop_lag_p99_seconds\s+(\S+)/m.exec(text);
    return m ? Number(m[1]) * 1000 : undefined;
  } catch {
    return undefined;
  }
}

interface Layout {
  label: string;
  /** `harvest worker` argument lists; each gets its own metrics port. */
  workers: string[][];
}

async function runLayout(sandbox: SandboxChild, layout: Layout) {
  const dir = benchDir('inflight');
  const prefix = benchPrefix();
  const env = benchEnv({ apiUrl: sandbox.url, prefix, dir, logLevel: 'warn' });
  const file = path.join(dir, 'inflight.yaml');
  writeFileSync(
    file,
    matrixPipeline({ name: 'bench-inflight', count: N, concurrency: CONCURRENCY, maxAttempts: 3 }),
  );
  const probes: WorkerProbe[] = [];
  for (const [i, args] of layout.workers.entries()) {
    const port = await freePort();
    const child = spawnNode([HARVEST_BIN, 'worker', ...args, '--metrics-port', String(port)], {
      env: { ...env, LOG_LEVEL: 'info' },
      stdout: 'ignore',
    });
    const label = `worker ${i + 1} (${args.join(' ')})`;
    const started = waitForOutput(child, 'stderr', /worker started/, 60_000);
    forwardStderr(child, `w${i + 1}`);
    await started;
    probes.push({
      label,
      pid: child.pid!,
      metricsUrl: `http://127.0.0.1:${port}/metrics`,
      rss: [],
      lagP99Ms: [],
    });
  }
  for (const p of probes) await scrapeLagMs(p.metricsUrl); // resets start-up's delays

  const cli = spawnNode([HARVEST_BIN, 'run', file, '--wait'], { env, stdout: 'ignore' });
  const runIdSeen = waitForOutput(cli, 'stderr', /^run (\S+): \d+ tasks/m, 600_000);
  const cliExit = once(cli, 'exit') as Promise<[number | null]>;
  const runId = (await runIdSeen)[1]!;
  const store = openStore(path.join(dir, 'harvest.db'), { readonly: true });
  let running = true;
  void cliExit.then(() => {
    running = false;
  });
  while (running) {
    const counts = store.tasks.counts(runId);
    const ended = (counts.done + counts.failed) / N;
    for (const p of probes) {
      const kb = readRssKb(p.pid);
      if (kb !== undefined) p.rss.push({ ended, kb });
      const lag = await scrapeLagMs(p.metricsUrl);
      if (lag !== undefined && ended > 0) p.lagP99Ms.push(lag);
    }
    await Promise.race([sleep(SCRAPE_MS), cliExit]);
  }
  const [exitCode] = await cliExit;
  const counts = store.tasks.counts(runId);
  const db = new Database(path.join(dir, 'harvest.db'), { readonly: true });
  const calls = db
    .prepare(
      'SELECT started_at AS start, started_at + duration_ms AS end FROM calls WHERE run_id = ? ORDER BY end',
    )
    .all(runId) as { start: number; end: number }[];
  db.close();
  store.close();
  const first = Math.min(...calls.map((c) => c.start));
  const last = calls.at(-1)!.end;
  const perS = counts.done / ((last - first) / 1000);
  return {
    layout,
    exitCode,
    counts,
    calls: calls.length,
    perS,
    steady: steadyState(calls),
    probes,
  };
}

/**
 * The steady state, between the times 10% and 90% of the calls had ended: calls ended per
 * second, the mean number in flight (each call's overlap with the interval, summed, over its
 * length) and the mean call duration as harvest measured it. C / mean latency is a
 * steady-state figure; the whole span also holds the ramp-up and the last wave's drain, which
 * alone cost about half a mean latency of a ~70 s run.
 */
function steadyState(calls: { start: number; end: number }[]) {
  const from = calls[Math.floor(calls.length * 0.1)]!.end;
  const to = calls[Math.floor(calls.length * 0.9)]!.end;
  let overlapMs = 0;
  let durationMs = 0;
  for (const c of calls) {
    overlapMs += Math.max(0, Math.min(c.end, to) - Math.max(c.start, from));
    durationMs += c.end - c.start;
  }
  const ended = calls.filter((c) => c.end > from && c.end <= to).length;
  return {
    perS: ended / ((to - from) / 1000),
    inFlight: overlapMs / (to - from),
    meanLatencyMs: durationMs / calls.length,
  };
}

/**
 * The highest RSS read while the share of the run ended went from `from` to `to`. Flatness
 * compares peaks, not single readings: a worker's RSS is a sawtooth of V8's heap growing until a
 * major collection (one worker here: 129, 190, then 150 MB), and a reading at 90% against one
 * at 25% took a tooth for growth (1.34 in one run, 0.97 in the next).
 */
function peakRss(probe: WorkerProbe, from: number, to: number): number | undefined {
  const kbs = probe.rss.filter((s) => s.ended > from && s.ended <= to).map((s) => s.kb);
  return kbs.length > 0 ? Math.max(...kbs) : undefined;
}

async function main(): Promise<void> {
  console.log(
    `inflight: ${N} one-result searches at concurrency ${CONCURRENCY}, sandbox latency 2000-5000 ms (ideal ${fixed(IDEAL_PER_S, 0)}/s)`,
  );
  const sandbox = await startSandboxChild([
    '--latency',
    '2000-5000',
    '--keys',
    `${SANDBOX_KEY}:team-bench:1000000000`,
  ]);
  const basePerS = await baseline(sandbox, BASELINE_N);
  console.log(
    `baseline (undici, ${CONCURRENCY} in flight, ${BASELINE_N} calls): ${fixed(basePerS, 1)}/s`,
  );

  const layouts: Layout[] = [
    {
      label: `1 worker x ${CONCURRENCY}`,
      workers: [['--roles', 'search,store', '-c', String(CONCURRENCY)]],
    },
    {
      label: `4 workers x ${CONCURRENCY / 4} + 1 store worker`,
      workers: [
        ...Array.from({ length: 4 }, () => ['--roles', 'search', '-c', String(CONCURRENCY / 4)]),
        ['--roles', 'store'],
      ],
    },
  ];
  const chosen = (process.env.LAYOUTS ?? 'A,B').toUpperCase().split(',');
  for (const [i, layout] of layouts.entries()) {
    if (!chosen.includes('AB'[i] ?? '')) continue;
    const r = await runLayout(sandbox, layout);
    const ratio = r.steady.perS / IDEAL_PER_S;
    const rows: [string, string][] = [
      ['run CLI exit code', String(r.exitCode)],
      ['tasks done / failed', `${r.counts.done} / ${r.counts.failed} (${r.calls} calls)`],
      ['throughput, 10% to 90% ended', `${fixed(r.steady.perS, 1)}/s`],
      ['  / ideal', fixed(ratio, 3)],
      [
        '  calls in flight (mean)',
        `${fixed(r.steady.inFlight, 0)} of ${CONCURRENCY} (${fixed(r.steady.inFlight / CONCURRENCY, 3)})`,
      ],
      ['  call duration (mean, harvest)', `${fixed(r.steady.meanLatencyMs, 0)} ms (sandbox: 3500)`],
      ['throughput, first start to last end', `${fixed(r.perS, 1)}/s`],
      ['  / ideal', fixed(r.perS / IDEAL_PER_S, 3)],
      ['  / baseline', fixed(r.perS / basePerS, 3)],
    ];
    let rssOk = true;
    let lagOk = true;
    for (const p of r.probes) {
      const peak = Math.max(...p.rss.map((s) => s.kb));
      const growth = (peakRss(p, 0.6, 0.95) ?? Number.NaN) / (peakRss(p, 0.25, 0.6) ?? Number.NaN);
      const lag = p.lagP99Ms.length ? Math.max(...p.lagP99Ms) : Number.NaN;
      rssOk &&= peak / 1024 <= MAX_RSS_MB && (growth <= MAX_GROWTH || Number.isNaN(growth));
      lagOk &&= !(lag > MAX_LAG_P99_MS);
      rows.push([
        p.label,
        `RSS peak ${mb(peak)}, peak 60-95% / 25-60% ${fixed(growth, 3)}, event-loop p99 worst ${fixed(lag, 1)} ms`,
      ]);
    }
    printBlock(layout.label, rows);
    console.log(
      verdict(
        ratio >= MIN_RATIO,
        `steady-state throughput / ideal ${fixed(ratio, 3)} >= ${MIN_RATIO}`,
      ),
    );
    console.log(
      verdict(rssOk, `every worker's RSS <= ${MAX_RSS_MB} MB and flat (<= ${MAX_GROWTH}x)`),
    );
    console.log(verdict(lagOk, `event-loop delay p99 <= ${MAX_LAG_P99_MS} ms in every worker`));
    console.log(
      verdict(
        r.exitCode === 0 && r.counts.done === N,
        `every task done (${r.counts.done} of ${N})`,
      ),
    );
  }
}

runBench(main);
