/**
 * Throughput of plain searches against the sandbox, next to a bare Fastify route measured in
 * the same run. Both servers run in child processes, so autocannon does not share their event
 * loop. Run: `npx tsx test/bench/sandbox.bench.ts` (DURATION_S and CONNECTIONS to change the load).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DURATION_S = Number(process.env.DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 16);
const TARGET_RPS = 3_000;

const BASELINE_SERVER = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.post('/v2/search', async () => ({ success: true, data: {} }));
await app.listen({ port: 0, host: '127.0.0.1' });
console.log('sandbox listening on http://127.0.0.1:' + app.server.address().port);
`;

async function startChild(args: string[]): Promise<{ child: ChildProcess; url: string }> {
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

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

async function load(url: string, title: string) {
  const result = await autocannon({
    url: `${url}/v2/search`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: DURATION_S,
    headers: { 'content-type': 'application/json', authorization: 'Bearer fc-sandbox' },
    // A handful of distinct queries, as a benchmark pipeline would send.
    requests: Array.from({ length: 8 }, (_, i) => ({
      body: JSON.stringify({ query: `benchmark query ${i}`, limit: 5 }),
    })),
  });
  const errors = result.errors + result.timeouts + result.non2xx;
  console.log(
    `${title.padEnd(28)} ${result.requests.average.toFixed(0).padStart(7)} req/s  ` +
      `p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms  errors/non-2xx ${errors}`,
  );
  return result.requests.average;
}

async function main() {
  console.log(`autocannon: ${CONNECTIONS} connections, ${DURATION_S} s each, POST /v2/search`);
  const baseline = await startChild(['--input-type=module', '-e', BASELINE_SERVER]);
  let baselineRps: number;
  try {
    await load(baseline.url, 'warm-up (baseline)');
    baselineRps = await load(baseline.url, 'bare Fastify route');
  } finally {
    await stop(baseline.child);
  }
  const sandbox = await startChild(['bin/harvest.js', 'sandbox', '--port', '0']);
  let sandboxRps: number;
  try {
    await load(sandbox.url, 'warm-up (sandbox)');
    sandboxRps = await load(sandbox.url, 'sandbox plain search');
  } finally {
    await stop(sandbox.child);
  }
  console.log(`ratio sandbox / bare Fastify: ${(sandboxRps / baselineRps).toFixed(2)}`);
  console.log(
    `target ${TARGET_RPS} searches/s: ${sandboxRps >= TARGET_RPS ? 'met' : 'NOT met'} (${sandboxRps.toFixed(0)})`,
  );
}

await main();
