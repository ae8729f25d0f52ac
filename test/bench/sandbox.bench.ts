/**
 * Cost of plain searches in the sandbox, next to a bare Fastify route measured in the same run
 * with the same request bodies. Both servers run in child processes (so autocannon does not
 * share their event loop) and are loaded in turn, round after round, so machine noise hits both.
 *
 * Loads: distinct queries (`bench <n>`, as a runner benchmark sends them, so every search misses
 * the results cache) with limit 1 and limit 5, and a handful of repeated queries (cache hits).
 * Two figures per load and round, both relative to the bare route of the same round:
 * searches/s, and CPU time of the server process per answered request (from /proc; steadier than
 * throughput on a busy machine).
 *
 * Run: `npx tsx test/bench/sandbox.bench.ts` (env: ROUNDS, DURATION_S per load, CONNECTIONS).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION_S = Number(process.env.DURATION_S ?? 5);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 16);
const WARM_UP_S = Math.min(3, DURATION_S);
const TARGET_RPS = 3_000;
const BENCH_CREDITS = 1_000_000_000;
/** Clock ticks per second of utime/stime in /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

const BASELINE_SERVER = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.post('/v2/search', async () => ({ success: true, data: {} }));
await app.listen({ port: 0, host: '127.0.0.1' });
console.log('sandbox listening on http://127.0.0.1:' + app.server.address().port);
`;

interface Server {
  child: ChildProcess;
  url: string;
}

async function startChild(args: string[]): Promise<Server> {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout?.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: string) => {
      out += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  return { child, url };
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

/** User + system CPU time of a process so far, in ms (undefined without /proc). */
function cpuMs(pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
  } catch {
    return undefined;
  }
}

type Bodies = 'distinct limit 1' | 'distinct limit 5' | 'repeated limit 5';
const LOADS: readonly Bodies[] = ['distinct limit 1', 'distinct limit 5', 'repeated limit 5'];

/** Numbers distinct queries over the whole run, so no load meets another's cached results. */
let queryNumber = 0;

/** The request bodies of a load: distinct queries per request, or 8 queries in turn. */
function requestsOf(bodies: Bodies): autocannon.Request[] {
  if (bodies === 'repeated limit 5') {
    return Array.from({ length: 8 }, (_, i) => ({
      body: JSON.stringify({ query: `benchmark query ${i}`, limit: 5 }),
    }));
  }
  const limit = bodies === 'distinct limit 1' ? 1 : 5;
  return [
    {
      setupRequest: (request) => {
        queryNumber += 1;
        return { ...request, body: JSON.stringify({ query: `bench ${queryNumber}`, limit }) };
      },
    },
  ];
}

interface Measure {
  rps: number;
  /** Server CPU per answered request, in µs. */
  cpuUs: number;
}

async function load(server: Server, title: string, bodies: Bodies, durationS: number) {
  const cpuBefore = cpuMs(server.child.pid);
  const result = await autocannon({
    url: `${server.url}/v2/search`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: durationS,
    headers: { 'content-type': 'application/json', authorization: 'Bearer fc-sandbox' },
    requests: requestsOf(bodies),
  });
  const cpuAfter = cpuMs(server.child.pid);
  const answered = result['2xx'];
  const rps = answered / durationS;
  const cpuUs =
    cpuBefore === undefined || cpuAfter === undefined
      ? Number.NaN
      : ((cpuAfter - cpuBefore) * 1000) / Math.max(1, answered);
  const errors = result.errors + result.timeouts + result.non2xx;
  console.log(
    `${title.padEnd(34)} ${rps.toFixed(0).padStart(7)} req/s  ${cpuUs.toFixed(0).padStart(4)} µs CPU/req  ` +
      `p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms  errors/non-2xx ${errors}`,
  );
  return { rps, cpuUs } satisfies Measure;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const range = (xs: number[], digits: number) =>
  `${Math.min(...xs).toFixed(digits)}..${Math.max(...xs).toFixed(digits)}`;

async function main() {
  console.log(
    `autocannon: ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION_S} s per load, POST /v2/search`,
  );
  let baseline: Server | undefined;
  let sandbox: Server | undefined;
  const rows = new Map<Bodies, Array<{ rpsRatio: number; cpuRatio: number } & Measure>>();
  const baselineRows: Measure[] = [];
  try {
    baseline = await startChild(['--input-type=module', '-e', BASELINE_SERVER]);
    // A fast machine spends the default key's million credits within a few rounds; then every
    // answer is a 402 and the figures mean nothing.
    sandbox = await startChild([
      'bin/harvest.js',
      'sandbox',
      '--port',
      '0',
      '--keys',
      `fc-sandbox:sandbox:${BENCH_CREDITS}`,
    ]);
    await load(baseline, 'warm-up (baseline)', 'distinct limit 1', WARM_UP_S);
    await load(sandbox, 'warm-up (sandbox)', 'distinct limit 1', WARM_UP_S);
    for (let round = 1; round <= ROUNDS; round++) {
      const base = await load(
        baseline,
        `round ${round}: bare Fastify route`,
        'distinct limit 1',
        DURATION_S,
      );
      baselineRows.push(base);
      for (const bodies of LOADS) {
        const m = await load(sandbox, `round ${round}: sandbox, ${bodies}`, bodies, DURATION_S);
        const list = rows.get(bodies) ?? [];
        list.push({ ...m, rpsRatio: m.rps / base.rps, cpuRatio: m.cpuUs / base.cpuUs });
        rows.set(bodies, list);
      }
    }
  } finally {
    await stop(sandbox?.child);
    await stop(baseline?.child);
  }
  console.log(
    `\nbare Fastify route: median ${median(baselineRows.map((r) => r.rps)).toFixed(0)} req/s, ` +
      `${median(baselineRows.map((r) => r.cpuUs)).toFixed(0)} µs CPU/req`,
  );
  for (const [bodies, list] of rows) {
    const rpsRatios = list.map((r) => r.rpsRatio);
    const cpuRatios = list.map((r) => r.cpuRatio);
    console.log(
      `sandbox, ${bodies.padEnd(16)}  median ${median(list.map((r) => r.rps))
        .toFixed(0)
        .padStart(6)} req/s, ` +
        `${median(list.map((r) => r.cpuUs))
          .toFixed(0)
          .padStart(4)} µs CPU/req;  ` +
        `vs bare route: req/s x${median(rpsRatios).toFixed(2)} (${range(rpsRatios, 2)}), ` +
        `CPU/req x${median(cpuRatios).toFixed(2)} (${range(cpuRatios, 2)})`,
    );
  }
  const slowest = Math.min(...[...rows.values()].map((list) => median(list.map((r) => r.rps))));
  console.log(
    `target ${TARGET_RPS} searches/s: ${slowest >= TARGET_RPS ? 'met' : 'NOT met'} (slowest load, median ${slowest.toFixed(0)})`,
  );
}

await main();
