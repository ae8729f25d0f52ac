/**
 * Storage per answer received: a pipeline of STORAGE_SEARCHES searches scraping markdown, html,
 * rawHtml and links (the sandbox's real-sized `corpus` pages) run STORAGE_RUNS times, the
 * sandbox's world advancing one epoch between runs (some pages change, results move, drop out
 * and appear). After each run the database is checkpointed and its file size divided by the
 * bytes of the JSON bodies of the answers received so far (counted by a proxy in front of the
 * sandbox, which asks for them uncompressed). Then, in a second database, the same number of
 * runs of an unchanging world: its size after the last run over its size after the first.
 *
 * Targets: file bytes ÷ answer bytes <= 0.15 after the last evolving run; identical runs take
 * at most 1.3 × the bytes of one.
 *
 * Run: `npx tsx test/bench/storage.bench.ts`
 * Knobs (env): STORAGE_SEARCHES (default 200), STORAGE_LIMIT (results per search, default 3),
 * STORAGE_RUNS (default 10). Small, to see it work: `STORAGE_SEARCHES=20 STORAGE_RUNS=3 npx tsx
 * test/bench/storage.bench.ts`.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import {
  benchDir,
  benchEnv,
  benchPrefix,
  fixed,
  HARVEST_BIN,
  onCleanup,
  printBlock,
  type Row,
  runBench,
  type SandboxChild,
  spawnNode,
  startSandboxChild,
  verdict,
} from './lib.ts';

const SEARCHES = Number(process.env.STORAGE_SEARCHES ?? 200);
const LIMIT = Number(process.env.STORAGE_LIMIT ?? 3);
const RUNS = Number(process.env.STORAGE_RUNS ?? 10);
const MAX_FILE_PER_ANSWER = 0.15;
const MAX_IDENTICAL_GROWTH = 1.3;

/** A proxy to `target` that counts the bytes of the search answers' bodies it passes on. */
async function countingProxy(target: string): Promise<{ url: string; bytes(): number }> {
  let bytes = 0;
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers, host: upstream.host };
    delete headers['accept-encoding'];
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.on('data', (chunk: Buffer) => {
          if (req.url?.startsWith('/v2/search')) bytes += chunk.length;
        });
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, bytes: () => bytes };
}

function pipelineYaml(name: string): string {
  const n = Array.from({ length: SEARCHES }, (_, i) => i).join(', ');
  return [
    `name: ${name}`,
    'run:',
    '  concurrency: 16',
    'searches:',
    '  - matrix:',
    `      n: [${n}]`,
    '    query: "storage topic {n}"',
    `    limit: ${LIMIT}`,
    '    scrapeOptions:',
    '      formats: [markdown, html, rawHtml, links]',
    '',
  ].join('\n');
}

/** One run of the pipeline with `harvest run --local`, to its end. */
async function harvestRun(file: string, env: NodeJS.ProcessEnv): Promise<void> {
  const cli = spawnNode([HARVEST_BIN, 'run', file, '--local'], { env, stdout: 'ignore' });
  let stderr = '';
  cli.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const code = await new Promise<number | null>((resolve) => cli.once('exit', resolve));
  if (code !== 0) throw new Error(`harvest run exited ${code}: ${stderr.slice(-2000)}`);
}

/** The database's size once its log is checkpointed into it. */
function fileBytes(dbPath: string): number {
  const db = new Sqlite(dbPath);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  return fs.statSync(dbPath).size;
}

interface Series {
  /** After each run: file bytes, answer bytes received so far. */
  points: { file: number; answers: number }[];
}

async function series(sandbox: SandboxChild, label: string, advance: boolean): Promise<Series> {
  const proxy = await countingProxy(sandbox.url);
  const dir = benchDir(`storage-${label}`);
  const file = path.join(dir, 'pipeline.yaml');
  fs.writeFileSync(file, pipelineYaml(`bench-storage-${label}`));
  const env = benchEnv({ apiUrl: proxy.url, prefix: benchPrefix(), dir });
  const points: Series['points'] = [];
  for (let run = 0; run < RUNS; run++) {
    if (advance && run > 0) {
      const res = await fetch(`${sandbox.url}/_sandbox/epoch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      if (!res.ok) throw new Error(`POST /_sandbox/epoch answered ${res.status}`);
    }
    await harvestRun(file, env);
    points.push({ file: fileBytes(env.HARVEST_DB ?? ''), answers: proxy.bytes() });
    console.log(`${label} run ${run + 1}/${RUNS} done`);
  }
  return { points };
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

runBench(async () => {
  console.log(`storage: ${SEARCHES} searches x ${LIMIT} results, ${RUNS} runs`);
  const evolving = await startSandboxChild(['--content', 'corpus']);
  const changing = await series(evolving, 'epochs', true);
  await evolving.stop();
  const still = await startSandboxChild(['--content', 'corpus']);
  const identical = await series(still, 'identical', false);
  await still.stop();

  const rows: Row[] = [['run', 'answers', 'file', 'file ÷ answers', 'identical file', '÷ run 1']];
  const first = identical.points[0]?.file ?? 1;
  changing.points.forEach((p, i) => {
    const same = identical.points[i]?.file ?? 0;
    rows.push([
      String(i + 1),
      mb(p.answers),
      mb(p.file),
      fixed(p.file / p.answers, 3),
      mb(same),
      fixed(same / first, 2),
    ]);
  });
  printBlock('SQLite file bytes (after checkpoint) per answer byte received', rows);
  const last = changing.points.at(-1) ?? { file: 0, answers: 1 };
  const ratio = last.file / last.answers;
  const growth = (identical.points.at(-1)?.file ?? 0) / first;
  console.log(
    verdict(
      ratio <= MAX_FILE_PER_ANSWER,
      `file ÷ answers ${fixed(ratio, 3)} (<= ${MAX_FILE_PER_ANSWER})`,
    ),
  );
  console.log(
    verdict(
      growth <= MAX_IDENTICAL_GROWTH,
      `${RUNS} identical runs ÷ one run ${fixed(growth, 2)} (<= ${MAX_IDENTICAL_GROWTH})`,
    ),
  );
});
