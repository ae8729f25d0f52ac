/**
 * Goodput under rate limits harvest is not told about (no run.rateLimitPerMinute): N searches
 * (default 2,000) against a sandbox that allows LIMIT requests (default 1,200) per WINDOW_MS
 * (default one minute), counted in four ways, all in one run. harvest and a naive client run
 * at the SAME concurrency, each against a fresh sandbox:
 *
 * | scenario       | sandbox                                   | targets (harvest)                       |
 * |----------------|-------------------------------------------|-----------------------------------------|
 * | `fixed`        | fixed windows aligned to the clock, as    | makespan <= the naive client's;         |
 * |                | the hosted service counts                 | 429s <= 1% of calls                     |
 * | `sliding`      | a sliding log                             | makespan / (N / LIMIT) <= 1.05;         |
 * | `token-bucket` | a bucket of LIMIT, refilled evenly        | 429s <= 2% of calls                     |
 * | `halved`       | fixed; LIMIT / 2 from HALVE_AT_S on (the  | 429s <= 3% of calls; no 429 later than  |
 * |                | window's count so far stays, as a plan    | one window after the change             |
 * |                | change would leave it)                    |                                         |
 *
 * The naive client: CONCURRENCY lanes, each search wrapped in p-retry (exponential from 1 s, no
 * jitter, 7 retries). Calls and 429s are the sandbox's ledger; harvest's credits stored are
 * compared with those billed.
 *
 * Fixed windows are aligned to the clock, so clients start ALIGN_S seconds into a window
 * (default 1: the whole first window is available, and what is left of it must be waited out,
 * the hardest start for a client that learns the limit).
 *
 * The run is bound by the rate limit (it mostly waits for windows), not by CPU: figures taken
 * on a machine shared with other work move little, but say so when reporting them.
 *
 * Run: `npx tsx test/bench/goodput.bench.ts` (about 10 minutes with the defaults; for a quick
 * check that it works: `N=300 LIMIT=200 WINDOW_MS=10000 npx tsx test/bench/goodput.bench.ts`).
 * Knobs (env): N, LIMIT, WINDOW_MS, CONCURRENCY (32), LATENCY (sandbox latency MS or MIN-MAX,
 * default 50-150; `none`), ALIGN_S (`off` to start at once), SCENARIOS (comma-separated, default
 * all four), NAIVE (scenarios the naive client runs in, default fixed,sliding,token-bucket),
 * HALVE_AT_S (seconds after the start, default half a window).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import pRetry from 'p-retry';
import { startLocalPool } from '../../jobs/local.ts';
import { createLogger } from '../../src/log.ts';
import { openRuntime } from '../../src/run/runtime.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import type { LedgerSnapshot } from '../../src/sandbox/index.ts';
import {
  alignToWindow,
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
const WINDOW_MS = Number(process.env.WINDOW_MS ?? 60_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const NAIVE_RETRIES = 7;
const LATENCY = process.env.LATENCY ?? '50-150';
const ALIGN_S = process.env.ALIGN_S ?? '1';
const HALVE_AT_S = Number(process.env.HALVE_AT_S ?? WINDOW_MS / 2000);
const SCENARIOS = list(process.env.SCENARIOS ?? 'fixed,sliding,token-bucket,halved');
const NAIVE = list(process.env.NAIVE ?? 'fixed,sliding,token-bucket');

type Scenario = 'fixed' | 'sliding' | 'token-bucket' | 'halved';
const MODE: Record<Scenario, string> = {
  fixed: 'fixed',
  sliding: 'sliding',
  'token-bucket': 'token-bucket',
  halved: 'fixed',
};

interface Outcome {
  makespanMs: number;
  startOffsetS: number;
  ok: number;
  failed: number;
  calls: number;
  rejected429: number;
  creditsBilled: number;
  creditsStored?: number;
  /** halved: when the limit changed, and the last 429 after it (epoch ms). */
  changedAt?: number;
  last429At?: number;
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function sandboxFlags(scenario: Scenario): string[] {
  const flags = ['--rate-limit', String(LIMIT), '--rate-limit-mode', MODE[scenario]];
  flags.push('--rate-limit-window', String(WINDOW_MS));
  if (LATENCY !== 'none') flags.push('--latency', LATENCY);
  return flags;
}

/** Fixed windows are aligned to the clock: start a fixed amount into one. */
async function align(scenario: Scenario): Promise<number> {
  if (ALIGN_S === 'off' || MODE[scenario] !== 'fixed') return 0;
  return (await alignToWindow(Number(ALIGN_S) * 1000, WINDOW_MS)) / 1000;
}

function fromLedger(ledger: LedgerSnapshot) {
  const team = ledger.teams.sandbox;
  return {
    calls: sumCalls(team?.calls) + (team?.dropped ?? 0),
    rejected429: team?.calls['429'] ?? 0,
    creditsBilled: team?.creditsCharged ?? 0,
  };
}

/** halved: lowers the sandbox's limit HALVE_AT_S after the start, keeping the window's count. */
function scheduleHalving(scenario: Scenario, sandbox: SandboxChild) {
  if (scenario !== 'halved') return { changedAt: async () => undefined };
  const change = (async () => {
    await sleep(HALVE_AT_S * 1000);
    const changedAt = Date.now();
    const res = await fetch(`${sandbox.url}/_sandbox/rate-limit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ perMinute: Math.floor(LIMIT / 2), keepCounts: true }),
    });
    if (!res.ok) throw new Error(`POST /_sandbox/rate-limit answered ${res.status}`);
    return changedAt;
  })();
  return { changedAt: () => change };
}

async function runHarvest(scenario: Scenario, sandbox: SandboxChild): Promise<Outcome> {
  const dir = benchDir('goodput');
  const settings = benchSettings({ apiUrl: sandbox.url, prefix: benchPrefix(), dir });
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

  const startOffsetS = await align(scenario);
  const t0 = performance.now();
  const halving = scheduleHalving(scenario, sandbox);
  const { runId } = await startRun(runtime, file, { logger });
  const final = await waitForRun(runtime, runId, { pollMs: 100 });
  const makespanMs = performance.now() - t0;

  await closePool();
  const creditsStored = runtime.store.calls.summary(runId).creditsUsed;
  await closeRuntime();
  const changedAt = scenario === 'halved' ? await halving.changedAt() : undefined;
  return {
    makespanMs,
    startOffsetS,
    ok: final.done,
    failed: final.failed + (final.total - final.done - final.failed),
    ...fromLedger(await sandbox.ledger()),
    creditsStored,
    changedAt,
    last429At: changedAt === undefined ? undefined : last429(settings.dbPath, runId),
  };
}

/** When the last call answered 429 started, from harvest's own records. */
function last429(dbPath: string, runId: string): number | undefined {
  const db = new Database(dbPath, { readonly: true });
  try {
    const row = db
      .prepare(
        "SELECT MAX(started_at) AS at FROM calls WHERE run_id = ? AND outcome = 'RATE_LIMITED'",
      )
      .get(runId) as { at: number | null };
    return row.at ?? undefined;
  } finally {
    db.close();
  }
}

class HttpError extends Error {}

/** One search with fetch; any failure (status, network, body) becomes a retryable Error. */
async function searchOnce(url: string, n: number, on429: () => void): Promise<void> {
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
  if (res.status === 429) on429();
  if (!res.ok) throw new HttpError(`HTTP ${res.status}`);
  try {
    JSON.parse(text);
  } catch {
    throw new HttpError('malformed body');
  }
}

async function runNaive(scenario: Scenario, sandbox: SandboxChild): Promise<Outcome> {
  let next = 0;
  let ok = 0;
  let failed = 0;
  let last429At: number | undefined;
  const startOffsetS = await align(scenario);
  const t0 = performance.now();
  const halving = scheduleHalving(scenario, sandbox);
  const lane = async () => {
    for (let n = next++; n < N; n = next++) {
      try {
        // p-retry's defaults: factor 2 from 1 s, no jitter (1, 2, 4, ... 64 s).
        await pRetry(
          () =>
            searchOnce(sandbox.url, n, () => {
              last429At = Date.now();
            }),
          { retries: NAIVE_RETRIES },
        );
        ok++;
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const makespanMs = performance.now() - t0;
  const changedAt = await halving.changedAt();
  return {
    makespanMs,
    startOffsetS,
    ok,
    failed,
    ...fromLedger(await sandbox.ledger()),
    changedAt,
    last429At: changedAt === undefined ? undefined : last429At,
  };
}

async function measure(
  scenario: Scenario,
  client: (scenario: Scenario, sandbox: SandboxChild) => Promise<Outcome>,
  label: string,
): Promise<Outcome> {
  const sandbox = await startSandboxChild(sandboxFlags(scenario));
  console.log(`${scenario}: ${label} ...`);
  const outcome = await client(scenario, sandbox);
  console.log(`  done in ${fixed(outcome.makespanMs / 1000, 1)} s`);
  await sandbox.stop();
  return outcome;
}

const idealS = N / (LIMIT / (WINDOW_MS / 1000));
const ratio = (o: Outcome) => o.makespanMs / 1000 / idealS;
const share = (o: Outcome) => (o.calls > 0 ? o.rejected429 / o.calls : 0);
/** Seconds from the change to the last 429 after it (0 when none came after it). */
const settleS = (o: Outcome) =>
  o.changedAt === undefined ? undefined : Math.max(0, ((o.last429At ?? 0) - o.changedAt) / 1000);

function print(scenario: Scenario, harvest: Outcome, naive: Outcome | undefined): void {
  const both = (f: (o: Outcome) => string): [string, string] => [
    f(harvest),
    naive ? f(naive) : '-',
  ];
  const rows: [string, ...string[]][] = [
    ['', 'harvest', 'naive p-retry'],
    ['start (s into a window)', ...both((o) => fixed(o.startOffsetS, 1))],
    ['makespan', ...both((o) => `${fixed(o.makespanMs / 1000, 1)} s`)],
    ['ideal (N / limit)', ...both(() => `${fixed(idealS, 1)} s`)],
    ['makespan / ideal', ...both((o) => fixed(ratio(o), 3))],
    ['searches ok / failed', ...both((o) => `${o.ok} / ${o.failed}`)],
    ['calls (sandbox ledger)', ...both((o) => String(o.calls))],
    ['answered 429', ...both((o) => String(o.rejected429))],
    ['429 share', ...both((o) => pct(share(o)))],
    ['credits billed (ledger)', ...both((o) => String(o.creditsBilled))],
    ['credits stored (SQLite)', ...both((o) => String(o.creditsStored ?? '-'))],
  ];
  if (scenario === 'halved') {
    rows.push([
      'last 429 after the change',
      ...both((o) => {
        const s = settleS(o);
        return s === undefined ? 'no change (ended first)' : `${fixed(s, 1)} s`;
      }),
    ]);
  }
  printBlock(
    `${scenario}: ${N} searches, ${LIMIT} per ${WINDOW_MS / 1000} s, concurrency ${CONCURRENCY}`,
    rows,
  );
}

function verdicts(scenario: Scenario, harvest: Outcome, naive: Outcome | undefined): string[] {
  const out: string[] = [];
  const share429 = (max: number) =>
    verdict(
      share(harvest) <= max,
      `${scenario}: harvest 429 share ${pct(share(harvest))} <= ${pct(max, 0)}`,
    );
  if (scenario === 'fixed') {
    out.push(
      naive
        ? verdict(
            harvest.makespanMs <= naive.makespanMs,
            `fixed: harvest makespan ${fixed(harvest.makespanMs / 1000, 1)} s <= naive ${fixed(naive.makespanMs / 1000, 1)} s`,
          )
        : 'SKIP  fixed: makespan against the naive client (NAIVE does not include fixed)',
      share429(0.01),
    );
  }
  if (scenario === 'sliding' || scenario === 'token-bucket') {
    out.push(
      verdict(
        ratio(harvest) <= 1.05,
        `${scenario}: harvest makespan / ideal ${fixed(ratio(harvest), 3)} <= 1.05`,
      ),
      share429(0.02),
    );
  }
  if (scenario === 'halved') {
    const s = settleS(harvest);
    out.push(
      share429(0.03),
      s === undefined
        ? 'FAIL  halved: the run ended before the limit changed (raise N or lower HALVE_AT_S)'
        : verdict(
            s <= WINDOW_MS / 1000,
            `halved: harvest's last 429 ${fixed(s, 1)} s after the change <= one window (${WINDOW_MS / 1000} s)`,
          ),
    );
  }
  out.push(
    verdict(
      harvest.creditsStored === harvest.creditsBilled && harvest.failed === 0,
      `${scenario}: harvest stored every credit billed (${harvest.creditsStored} of ${harvest.creditsBilled}) and every search`,
    ),
  );
  return out;
}

async function main(): Promise<void> {
  const scenarios = SCENARIOS.filter((s): s is Scenario => s in MODE);
  console.log(
    `goodput: ${N} searches, sandbox limit ${LIMIT} per ${WINDOW_MS / 1000} s (latency ${LATENCY} ms), ` +
      `ideal ${fixed(idealS, 1)} s; harvest and the naive client (p-retry ${NAIVE_RETRIES}) at ` +
      `concurrency ${CONCURRENCY}; scenarios ${scenarios.join(', ')}`,
  );
  const lines: string[] = [];
  for (const scenario of scenarios) {
    const harvest = await measure(scenario, runHarvest, 'harvest');
    const naive = NAIVE.includes(scenario)
      ? await measure(scenario, runNaive, 'naive client')
      : undefined;
    print(scenario, harvest, naive);
    lines.push(...verdicts(scenario, harvest, naive));
  }
  console.log('');
  for (const line of lines) console.log(line);
}

runBench(main);
