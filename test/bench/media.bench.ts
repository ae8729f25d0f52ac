/**
 * Media under pressure: RESULTS results (default 500) each carrying a screenshot, an audio and a
 * video URL, with lifetimes scaled so audio and video URLs live AV_LIFE_S seconds (default 3;
 * screenshots then live 24 times as long), while a backlog of BACKLOG plain searches (default
 * 3,000) keeps the search queue saturated the whole time. One pool runs the search, store and
 * media roles, as `harvest run --local` does.
 *
 * Figures, all from the same run:
 * - share saved before expiry: media saved from the URL of the first answer, before that URL
 *   expired (target 100%); and the share saved by its deadline (expiry less the safety margin);
 * - re-issues (searches called again for fresh URLs) and their credits;
 * - throughput ratio: harvest's media download throughput ÷ a bare undici stream-to-file of the
 *   same files, at the same concurrency, while the backlog still runs (target >= 0.8). Both in
 *   bytes per second between the first and the last file completed (harvest: saved, its row
 *   committed; baseline: written), so neither counts the wait for the first answer. Harvest's
 *   end-to-end window (first answer to last file saved) is printed too. The baseline fetches
 *   fresh URLs for the same files first (the first ones have expired by then).
 *
 * Run: `npx tsx test/bench/media.bench.ts`
 * Knobs (env): RESULTS (500), AV_LIFE_S (3), BACKLOG (3000), SEARCH_CONCURRENCY (32),
 * MEDIA_CONCURRENCY (32), PAD_BYTES (bytes added to each file, default 100000: files of about
 * 100 kB), LATENCY (sandbox latency of searches, MS or MIN-MAX, default 20-60; `none`).
 * Small proof: `RESULTS=30 BACKLOG=200 PAD_BYTES=1000 npx tsx test/bench/media.bench.ts`.
 */
import { createWriteStream, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline as pipe } from 'node:stream/promises';
import { Agent, request } from 'undici';
import { loadSettings } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { type AnswerData, matchFresh } from '../../src/media/collect.ts';
import { openRuntime, type Runtime } from '../../src/run/runtime.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import type { MediaRow } from '../../src/store/index.ts';
import { startLocalPool } from '../../src/worker/local.ts';
import {
  benchDir,
  benchEnv,
  benchPrefix,
  closer,
  fixed,
  pct,
  printBlock,
  runBench,
  SANDBOX_KEY,
  type SandboxChild,
  startSandboxChild,
  verdict,
} from './lib.ts';

const RESULTS = Number(process.env.RESULTS ?? 500);
const AV_LIFE_S = Number(process.env.AV_LIFE_S ?? 3);
const BACKLOG = Number(process.env.BACKLOG ?? 3_000);
const SEARCH_CONCURRENCY = Number(process.env.SEARCH_CONCURRENCY ?? 32);
const MEDIA_CONCURRENCY = Number(process.env.MEDIA_CONCURRENCY ?? 32);
const PAD_BYTES = Number(process.env.PAD_BYTES ?? 100_000);
const LATENCY = process.env.LATENCY ?? '20-60';
const RESULTS_PER_SEARCH = 10;
const TARGET_SAVED = 1;
const TARGET_RATIO = 0.8;

function mediaPipeline(searches: number): string {
  const n = Array.from({ length: searches }, (_, i) => i).join(', ');
  return `name: bench-media\nrun:\n  concurrency: ${SEARCH_CONCURRENCY}\nsearches:\n  - matrix:\n      n: [${n}]\n    query: "bench media {n}"\n    limit: ${RESULTS_PER_SEARCH}\n    scrapeOptions:\n      formats: [screenshot, audio, video]\nmedia:\n  screenshot: true\n  audio: true\n  video: true\n`;
}

function backlogPipeline(): string {
  const n = Array.from({ length: BACKLOG }, (_, i) => i).join(', ');
  return `name: bench-backlog\nrun:\n  maxAttempts: 10\nsearches:\n  - matrix:\n      n: [${n}]\n    query: "bench backlog {n}"\n    limit: 1\n`;
}

interface HarvestFigures {
  rows: MediaRow[];
  /** First answer to last file saved, in ms. */
  windowMs: number;
  /** First to last file saved, in ms, and the bytes saved after the first. */
  steadyMs: number;
  steadyBytes: number;
  reissueCalls: number;
  reissueCredits: number;
  backlogDoneAtEnd: number;
}

async function runHarvest(
  runtime: Runtime,
  dir: string,
): Promise<{ backlogRunId: string; f: HarvestFigures }> {
  const logger = createLogger({ level: 'silent' });
  const settings = runtime.settings;
  const pool = await startLocalPool(settings, {
    roles: ['search', 'store', 'media'],
    concurrency: SEARCH_CONCURRENCY,
    store: runtime.store,
    logger,
  });
  // Closed at cleanup: the pool keeps working the backlog while the baseline runs.
  closer(() => pool.close());
  // Results are not all scraped (some queries answer fewer, some scrapes fail): plan enough.
  const searches = Math.ceil(RESULTS / RESULTS_PER_SEARCH / 0.75);
  const mediaFile = path.join(dir, 'media.yaml');
  writeFileSync(mediaFile, mediaPipeline(searches));
  const backlogFile = path.join(dir, 'backlog.yaml');
  writeFileSync(backlogFile, backlogPipeline());
  const { runId } = await startRun(runtime, mediaFile, { logger });
  // Right behind it, a backlog that keeps every search slot busy.
  const backlog = await startRun(runtime, backlogFile, { logger });
  await waitForRun(runtime, runId, { pollMs: 50, waitForMedia: true });
  const rows = runtime.store.media.ofRun(runId);
  const saved = rows.filter((r) => r.savedAt !== null);
  saved.sort((a, b) => a.savedAt! - b.savedAt!);
  const firstIssued = Math.min(...rows.map((r) => r.issuedAt));
  const lastSaved = saved.at(-1)?.savedAt ?? firstIssued;
  const counts = runtime.store.mediaCounts(runId);
  const f: HarvestFigures = {
    rows,
    windowMs: lastSaved - firstIssued,
    steadyMs: lastSaved - (saved[0]?.savedAt ?? lastSaved),
    steadyBytes: saved.slice(1).reduce((a, r) => a + (r.bytes ?? 0), 0),
    reissueCalls: counts.reissueCalls,
    reissueCredits: counts.reissueCredits,
    backlogDoneAtEnd: runtime.store.tasks.counts(backlog.runId).done,
  };
  return { backlogRunId: backlog.runId, f };
}

/** Fresh URLs for the saved rows: the same searches again, matched by result URL. */
async function freshUrls(runtime: Runtime, sandbox: SandboxChild, rows: MediaRow[]) {
  const byTask = new Map<string, MediaRow[]>();
  for (const r of rows) byTask.set(r.taskKey, [...(byTask.get(r.taskKey) ?? []), r]);
  const urls: string[] = [];
  for (const [taskKey, taskRows] of byTask) {
    const task = runtime.store.tasks.get(taskRows[0]!.runId, taskKey)!;
    const res = await fetch(`${sandbox.url}/v2/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SANDBOX_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(task.request),
    });
    const body = (await res.json()) as { data: AnswerData };
    for (const r of taskRows) {
      const m = matchFresh(body.data, r);
      if (m.found) urls.push(m.url);
    }
  }
  return urls;
}

/** The baseline: undici stream-to-file, MEDIA_CONCURRENCY at a time. */
async function bareDownload(urls: string[], dir: string) {
  await mkdir(dir, { recursive: true });
  const agent = new Agent({ connections: MEDIA_CONCURRENCY });
  let next = 0;
  const done: Array<{ at: number; bytes: number }> = [];
  const t0 = performance.now();
  const lane = async () => {
    for (let i = next++; i < urls.length; i = next++) {
      const { body } = await request(urls[i]!, { dispatcher: agent });
      const out = createWriteStream(path.join(dir, `${i}.bin`));
      let bytes = 0;
      body.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
      });
      await pipe(body, out);
      done.push({ at: performance.now(), bytes });
    }
  };
  await Promise.all(Array.from({ length: MEDIA_CONCURRENCY }, lane));
  const windowMs = performance.now() - t0;
  await agent.close();
  return {
    windowMs,
    steadyMs: (done.at(-1)?.at ?? 0) - (done[0]?.at ?? 0),
    steadyBytes: done.slice(1).reduce((sum, d) => sum + d.bytes, 0),
  };
}

async function main(): Promise<void> {
  const timeScale = AV_LIFE_S / 3600;
  console.log(
    `media: ~${RESULTS} results x (screenshot, audio, video), audio/video URLs live ${AV_LIFE_S} s ` +
      `(time scale ${timeScale.toExponential(2)}), files ~${PAD_BYTES} B, backlog ${BACKLOG} searches, ` +
      `search concurrency ${SEARCH_CONCURRENCY}, media concurrency ${MEDIA_CONCURRENCY}`,
  );
  const flags = ['--time-scale', String(timeScale), '--media-pad', String(PAD_BYTES)];
  if (LATENCY !== 'none') flags.push('--latency', LATENCY);
  const sandbox = await startSandboxChild(flags);
  const dir = benchDir('media');
  const prefix = benchPrefix();
  const settings = loadSettings({
    ...benchEnv({ apiUrl: sandbox.url, prefix, dir }),
    HARVEST_MEDIA_CONCURRENCY: String(MEDIA_CONCURRENCY),
  });
  const runtime = await openRuntime(settings);
  closer(() => runtime.close());

  console.log('harvest run --local ...');
  const { backlogRunId, f } = await runHarvest(runtime, dir);
  const saved = f.rows.filter((r) => r.status === 'saved');
  console.log(`  ${saved.length}/${f.rows.length} saved in ${fixed(f.windowMs / 1000, 2)} s`);

  console.log('bare undici stream-to-file of the same files ...');
  const urls = await freshUrls(runtime, sandbox, saved);
  const bare = await bareDownload(urls, path.join(dir, 'bare'));
  const backlogStillRunning = runtime.store.tasks.counts(backlogRunId);
  const ledger = await sandbox.ledger();

  // The media host serves a URL only before it expires: a file saved from the URL of the
  // first answer was fetched before that URL expired.
  const firstUrlSaved = f.rows.filter((r) => r.status === 'saved' && r.reissues === 0).length;
  const committedBeforeExpiry = f.rows.filter(
    (r) => r.status === 'saved' && r.reissues === 0 && r.savedAt! < (r.expiresAt ?? 0),
  ).length;
  const harvestRate = f.steadyBytes / (f.steadyMs / 1000);
  const bareRate = bare.steadyBytes / (bare.steadyMs / 1000);
  const ratio = harvestRate / bareRate;
  const share = f.rows.length > 0 ? firstUrlSaved / f.rows.length : 0;
  const of = (n: number) => pct(f.rows.length > 0 ? n / f.rows.length : 0);
  printBlock('media', [
    ['', 'harvest', 'bare undici'],
    ['media items', String(f.rows.length), String(urls.length)],
    ['saved', String(saved.length), String(urls.length)],
    ['saved before expiry (from the first URL)', of(firstUrlSaved), '-'],
    ['  ... its row committed before the expiry too', of(committedBeforeExpiry), '-'],
    ['re-issue calls', String(f.reissueCalls), '-'],
    ['re-issue credits', String(f.reissueCredits), '-'],
    [
      'first answer (or request) to last file',
      `${fixed(f.windowMs / 1000, 2)} s`,
      `${fixed(bare.windowMs / 1000, 2)} s`,
    ],
    [
      'first to last file',
      `${fixed(f.steadyMs / 1000, 2)} s`,
      `${fixed(bare.steadyMs / 1000, 2)} s`,
    ],
    [
      'files/s (first to last file)',
      fixed((saved.length - 1) / (f.steadyMs / 1000), 1),
      fixed((urls.length - 1) / (bare.steadyMs / 1000), 1),
    ],
    ['MB/s (first to last file)', fixed(harvestRate / 1e6, 2), fixed(bareRate / 1e6, 2)],
    [
      'search backlog done (of BACKLOG)',
      `${f.backlogDoneAtEnd} at media end`,
      `${backlogStillRunning.done} at baseline end`,
    ],
    ['429 answers (sandbox)', String(ledger.teams.sandbox?.calls['429'] ?? 0), '-'],
    ['media requests with Authorization', String(ledger.media.withAuthorization), '-'],
  ]);
  console.log('');
  console.log(verdict(share >= TARGET_SAVED, `saved before expiry ${pct(share)} (target 100%)`));
  console.log(
    verdict(ratio >= TARGET_RATIO, `throughput ratio ${fixed(ratio)} (target >= ${TARGET_RATIO})`),
  );
  if (f.backlogDoneAtEnd >= BACKLOG) {
    console.log(
      'note: the backlog ended before the media did; raise BACKLOG to keep the search queue saturated',
    );
  }
}

runBench(main);
