/**
 * Goodput under a rate limit harvest is not told about: N searches (default 2,000) against a
 * sandbox that allows LIMIT requests per minute (default 1,200), without run.rateLimitPerMinute.
 * Targets: makespan / (N / LIMIT) <= 1.10, and 429 answers <= 5% of all calls (sandbox ledger).
 * A naive client (fixed concurrency, each search wrapped in p-retry with exponential backoff)
 * runs against a fresh sandbox with the same limit, and both are printed side by side.
 *
 * The sandbox counts requests in fixed wall-clock minutes, so both clients start at the same
 * second past a minute (ALIGN_S, default 1: the whole first window is available, and what is
 * left of it must be waited out: the hardest start for a client that learns the limit).
 *
 * Run: `npx tsx test/bench/goodput.bench.ts`
 * Knobs (env): N, LIMIT, CONCURRENCY (harvest, 32), NAIVE_CONCURRENCY (16),
 * LATENCY (sandbox latency MS or MIN-MAX, default 50-150; `none` for none), ALIGN_S (`off` to
 * start at once). Takes about 4-5 minutes.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pRetry from 'p-retry';
import { createLogger } from '../../src/log.ts';
import { startLocalPool } from '../../src/run/local.ts';
import { openRuntime } from '../../src/run/runtime.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import type { LedgerSnapshot } from '../../src/sandbox/index.ts';
import {
  alignToMinute,
  benchDir,
  benchPrefix,
  benchSettings,
  closer,
  fixed,
  matrixPipeline,
  pct,
  printBlock,
  runBench,
  SANDBOX_KEY,
  type SandboxChild,
  startSandboxChild,
  sumCalls,
  verdict,
} from './lib.ts';

const N = Number(process.env.N ?? 2_000);
const LIMIT = Number(process.env.LIMIT ?? 1_200);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const NAIVE_CONCURRENCY = Number(process.env.NAIVE_CONCURRENCY ?? 16);
const NAIVE_RETRIES = 7;
const LATENCY = process.env.LATENCY ?? '50-150';
const ALIGN_S = process.env.ALIGN_S ?? '1';
const MAX_RATIO = 1.1;
const MAX_429_SHARE = 0.05;

interface Outcome {
  makespanMs: number;
  startOffsetS: number;
  ok: number;
  failed: number;
  calls: number;
  rejected429: number;
  creditsBilled: number;
  creditsStored?: number;
}

function sandboxFlags(): string[] {
  const flags = ['--rate-limit', String(LIMIT)];
  if (LATENCY !== 'none') flags.push('--latency', LATENCY);
  return flags;
}

async function align(): Promise<number> {
  if (ALIGN_S === 'off') return (Date.now() % 60_000) / 1000;
  return alignToMinute(Number(ALIGN_S));
}

function fromLedger(ledger: LedgerSnapshot) {
  const team = ledger.teams.sandbox;
  return {
    calls: sumCalls(team?.calls) + (team?.dropped ?? 0),
    rejected429: team?.calls['429'] ?? 0,
    creditsBilled: team?.creditsCharged ?? 0,
  };
}

async function runHarvest(sandbox: SandboxChild): Promise<Outcome> {
  const dir = benchDir('goodput');
  const prefix = benchPrefix();
  const settings = benchSettings({ apiUrl: sandbox.url, prefix, dir });
  const logger = createLogger({ level: 'silent' });
  const file = path.join(dir, 'goodput.yaml');
  // No rateLimitPerMinute: harvest has to find the limit from the 429s.
  writeFileSync(
    file,
    matrixPipeline({ name: 'bench-goodput', count: N, concurrency: CONCURRENCY, maxAttempts: 10 }),
  );
  const runtime = await openRuntime(settings);
  const closeRuntime = closer(() => runtime.close());
  const pool = await startLocalPool(settings, {
    roles: ['search', 'store'],
    concurrency: CONCURRENCY,
    store: runtime.store,
    logger,
  });
  const closePool = closer(() => pool.close());

  const startOffsetS = await align();
  const t0 = performance.now();
  const { runId } = await startRun(runtime, file, { logger });
  const final = await waitForRun(runtime, runId, { pollMs: 100 });
  const makespanMs = performance.now() - t0;

  await closePool();
  const creditsStored = runtime.store.calls.summary(runId).creditsUsed;
  await closeRuntime();
  return {
    makespanMs,
    startOffsetS,
    ok: final.done,
    failed: final.failed + (final.total - final.done - final.failed),
    ...fromLedger(await sandbox.ledger()),
    creditsStored,
  };
}

class HttpError extends Error {}

/** One search with fetch; any failure (status, network, body) becomes a retryable Error. */
async function searchOnce(url: string, n: number): Promise<void> {
  let res: Response;
  try {
    res = await fetch(`${url}/v2/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${SANDBOX_KEY}` },
      body: JSON.stringify({ query: `bench ${n}`, limit: 1 }),
    });
  } catch (error) {
    throw new HttpError(`network: ${(error as Error).message}`);
  }
  const text = await res.text();
  if (!res.ok) throw new HttpError(`HTTP ${res.status}`);
  try {
    JSON.parse(text);
  } catch {
    throw new HttpError('malformed body');
  }
}

async function runNaive(sandbox: SandboxChild): Promise<Outcome> {
  let next = 0;
  let ok = 0;
  let failed = 0;
  const startOffsetS = await align();
  const t0 = performance.now();
  const lane = async () => {
    for (let n = next++; n < N; n = next++) {
      try {
        // p-retry's defaults: factor 2 from 1 s, no jitter (1, 2, 4, ... 64 s).
        await pRetry(() => searchOnce(sandbox.url, n), { retries: NAIVE_RETRIES });
        ok++;
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: NAIVE_CONCURRENCY }, lane));
  const makespanMs = performance.now() - t0;
  return { makespanMs, startOffsetS, ok, failed, ...fromLedger(await sandbox.ledger()) };
}

async function main(): Promise<void> {
  const idealS = N / (LIMIT / 60);
  console.log(
    `goodput: ${N} searches, sandbox limit ${LIMIT}/min (fixed windows, latency ${LATENCY} ms), ` +
      `ideal ${fixed(idealS, 1)} s; harvest concurrency ${CONCURRENCY}, naive ${NAIVE_CONCURRENCY} ` +
      `with p-retry ${NAIVE_RETRIES}`,
  );

  let sandbox = await startSandboxChild(sandboxFlags());
  console.log('harvest run ...');
  const harvest = await runHarvest(sandbox);
  console.log(`  done in ${fixed(harvest.makespanMs / 1000, 1)} s`);
  await sandbox.stop();

  sandbox = await startSandboxChild(sandboxFlags());
  console.log('naive client ...');
  const naive = await runNaive(sandbox);
  console.log(`  done in ${fixed(naive.makespanMs / 1000, 1)} s`);
  await sandbox.stop();

  const ratio = (o: Outcome) => o.makespanMs / 1000 / idealS;
  const share = (o: Outcome) => (o.calls > 0 ? o.rejected429 / o.calls : 0);
  printBlock('goodput', [
    ['', 'harvest', 'naive p-retry'],
    ['start (s past the minute)', fixed(harvest.startOffsetS, 1), fixed(naive.startOffsetS, 1)],
    [
      'makespan',
      `${fixed(harvest.makespanMs / 1000, 1)} s`,
      `${fixed(naive.makespanMs / 1000, 1)} s`,
    ],
    ['ideal (N / limit)', `${fixed(idealS, 1)} s`, `${fixed(idealS, 1)} s`],
    ['makespan / ideal', fixed(ratio(harvest), 3), fixed(ratio(naive), 3)],
    ['searches ok / failed', `${harvest.ok} / ${harvest.failed}`, `${naive.ok} / ${naive.failed}`],
    ['calls (sandbox ledger)', String(harvest.calls), String(naive.calls)],
    ['answered 429', String(harvest.rejected429), String(naive.rejected429)],
    ['429 share', pct(share(harvest)), pct(share(naive))],
    ['credits billed (ledger)', String(harvest.creditsBilled), String(naive.creditsBilled)],
    ['credits stored (SQLite)', String(harvest.creditsStored), '-'],
  ]);
  console.log('');
  console.log(
    verdict(
      ratio(harvest) <= MAX_RATIO,
      `harvest makespan / ideal ${fixed(ratio(harvest), 3)} <= ${MAX_RATIO}`,
    ),
  );
  console.log(
    verdict(
      share(harvest) <= MAX_429_SHARE,
      `harvest 429 share ${pct(share(harvest))} <= ${pct(MAX_429_SHARE, 0)}`,
    ),
  );
  console.log(
    verdict(
      harvest.creditsStored === harvest.creditsBilled && harvest.failed === 0,
      `harvest stored every credit billed (${harvest.creditsStored} of ${harvest.creditsBilled}) and every search`,
    ),
  );
}

runBench(main);
