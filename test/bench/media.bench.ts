/**
 * Media under pressure: RESULTS results (default 500) each carrying a screenshot, an audio and a
 * video URL, with lifetimes scaled so audio and video URLs live AV_LIFE_S seconds (default 3;
 * screenshots then live 24 times as long), while a backlog of BACKLOG plain searches (default
 * 3,000) keeps the search queue saturated. One pool runs the search, store and media roles, as
 * `harvest run --local` does.
 *
 * The measure is repeated ROUNDS times (default 5) in one process, after WARMUP rounds (default
 * 1) that are not measured for throughput: the first round runs code neither this process nor
 * the sandbox has compiled yet (the sandbox's media route among it), and only the harvest phase,
 * which comes first, paid for that. Each round is the same two phases back to back, each started
 * with a full garbage collection in this process and in the sandbox (`collectBoth`). The
 * figures are the medians of the measured rounds; the lowest share saved before expiry (the
 * verdict), the media missed, the files the baseline could not fetch and the re-issues count
 * every round, warm-up included:
 * 1. harvest: a media run (queries of its own each round, so no file is stored already) with a
 *    backlog run of BACKLOG searches queued right behind it, until no media of the run is pending;
 * 2. baseline: a bare undici stream-to-file of the same files, at the same concurrency. Their
 *    first URLs have expired by then, so the baseline gets fresh ones as harvest got the first:
 *    a run of the same searches (the same requests, so the same files) without a `media`
 *    section, queued first with a backlog run of its own right behind it, made by the same pool,
 *    its answers stored the same way (BASELINE_SEARCHES=harvest, the default). Each stored
 *    result is read back as harvest's media enqueuer reads new rows, every 50 ms, and its files
 *    downloaded as they arrive, soonest expiry first. Both sides thus bear the same search work,
 *    and the ratio compares what harvest does to save a file (its media rows, queue, deadlines,
 *    checks, hash, temp file, fsyncs and rename, the row saved) with a bare download.
 *    BASELINE_SEARCHES=bare makes the searches by hand instead, SEARCH_CONCURRENCY `fetch` calls
 *    at a time outside the queue, answers neither checked nor stored: harvest's search path
 *    (queue, answer checks, results stored) then weighs on its side only.
 * The backlog run of each phase is cancelled at its end, so the next phase's searches are not
 * queued behind it.
 *
 * Both phases run with the same backlog in the search queue and the same pool, and the search
 * load on the process follows the same rule: during the harvest phase the pool's search gate
 * (jobs/search/gate.ts) stops new searches while media due within
 * HARVEST_MEDIA_URGENT_MS is not yet saved (the audio and video; not the screenshots, which live
 * 72 s) and some media waits to start; during the baseline the search queue is paused and
 * resumed by the same rule, checked as often (BASELINE_BACKLOG=gated, the default). `paused`
 * keeps it paused for the whole baseline (with BASELINE_SEARCHES=bare only), `running` never
 * pauses it. Backlog searches finished per second in each phase are printed, to compare the load
 * each side ran under.
 *
 * An earlier version ran one harvest phase, then one baseline: their search loads differed, and
 * the baseline's fresh URLs (fetched one search at a time) had partly expired before they were
 * downloaded, so it counted refusals as files. The baseline now counts only answers of status 200
 * whose size is the file harvest saved, and says how many it could not fetch. A later one fetched
 * the baseline's URLs before its window, so the sandbox's work for the searches fell in
 * harvest's window only; making them within the window did not move the ratio measurably
 * (medians 0.54 and 0.54 before, 0.47 and 0.59 after, interleaved), but compares like with like.
 * Until BASELINE_SEARCHES=harvest, the baseline made its searches by hand (now `bare`), and
 * harvest's search path (queue, answer checks, results stored) weighed on its side only. In runs
 * seven minutes apart, alternating (five rounds each), the medians read 0.83 and 0.84 with the
 * searches through the pool on both sides, 0.75 and 0.80 by hand; a run 6.9 minutes after the
 * last read 0.83, and one by hand 6.1 minutes after, 0.72.
 *
 * Figures, medians of the measured rounds (each round's figures are printed too):
 * - share saved before expiry: media saved from the URL of the first answer, before that URL
 *   expired (target 100% in every round, warm-up included: the verdict takes the lowest), and
 *   the share whose row was committed before the expiry too;
 * - re-issues (searches called again for fresh URLs) and their credits (totals of all rounds);
 * - throughput ratio: harvest's media download throughput / the baseline's (target >= 0.8).
 *   Both in bytes per second between the first and the last file completed (harvest: saved, its
 *   row committed; baseline: written), so neither counts the wait for the first answer.
 *   A round whose baseline could not fetch every file (slowed so much that fresh URLs expired
 *   before it reached them) is left out of the ratio's median.
 *   Harvest's end-to-end window (first answer to last file saved) and the spread of the media
 *   run's answers (first to last answer: files cannot be saved faster than they arrive) are
 *   printed too.
 * - CPU ms per file of each phase: this process (and its main thread), and the sandbox, which
 *   serves both sides' files and searches on the same cores. Searches of the phase are included.
 *   Where harvest, its SQLite writer thread, the sandbox and Redis together fill the machine's
 *   cores, the throughput ratio follows the ratio of the CPU per file of the two sides.
 *
 * The page cache skews the baseline: on a machine whose cache holds a few GB (after an export
 * benchmark, say), the baseline's writes, which are never fsynced, cost 3-4 times the CPU
 * (1.6-1.8 against 0.44-0.82 ms per file, measured in one sitting), harvest's do not, and the
 * ratio reads above 1. Compare runs on an emptied cache: `sync; echo 3 >
 * /proc/sys/vm/drop_caches` (root) before the run.
 *
 * Deleted files skew the harvest side, on ext4 without a journal (this project's machines): each
 * new file's inode is found by scanning its block group, and every inode deleted in the last
 * minute (the last six while its inode table block is unwritten) is passed over, one lookup
 * each. In a run within minutes of deleting thousands of files (the cleanup of the last run
 * deletes about 12,000), perf put `recently_deleted` at 0.16 ms of CPU per harvest file against
 * 0.02 per bare one, some 7% of harvest's CPU per file; six idle minutes later it was 0.00 on
 * both sides. A run 5.3 minutes after the last still paid 0.13 ms per harvest file for the
 * inode scan (`recently_deleted`, `find_get_block_common`), none per bare one: the inode table
 * blocks harvest's new files are written to are dirty, and a dirty block's deleted inodes count
 * as recent for six minutes. Leave seven minutes between runs, and do not delete many files
 * meanwhile; a run says so when the last one removed its files less than seven minutes before.
 *
 * Run: `npx tsx test/bench/media.bench.ts`
 * Knobs (env): RESULTS (500), AV_LIFE_S (3), BACKLOG (3000), ROUNDS (5), WARMUP (1),
 * SEARCH_CONCURRENCY (32), MEDIA_CONCURRENCY (32), BASELINE_SEARCHES (harvest | bare),
 * BASELINE_BACKLOG (gated | paused | running), PAD_BYTES (bytes added to each file, default
 * 100000: files of about 100 kB), LATENCY (sandbox latency of searches, MS or MIN-MAX, default
 * 20-60; `none`), HARVEST_MEDIA_URGENT_MS (passed to harvest).
 * PHASE_MARKS=1 prints each phase's bounds on the monotonic clock, to cut a `perf record -k
 * CLOCK_MONOTONIC -a` profile to one side (see `mark`).
 * Small proof: `RESULTS=30 BACKLOG=200 PAD_BYTES=1000 npx tsx test/bench/media.bench.ts`.
 */
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline as pipe } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { Agent, request } from 'undici';
import { startLocalPool } from '../../jobs/local.ts';
import { URGENCY_CHECK_MS } from '../../jobs/media/urgency.ts';
import { loadSettings } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { type AnswerData, matchFresh } from '../../src/media/collect.ts';
import { openRuntime, type Runtime } from '../../src/run/runtime.ts';
import { startRun } from '../../src/run/start.ts';
import { stopRun } from '../../src/run/stop.ts';
import { waitForRun } from '../../src/run/wait.ts';
import type { MediaRow } from '../../src/store/index.ts';
import {
  benchDir,
  benchEnv,
  benchPrefix,
  closer,
  collectGarbage,
  fixed,
  median,
  onCleanup,
  pct,
  printBlock,
  readCpuMs,
  runBench,
  SANDBOX_KEY,
  type SandboxChild,
  startSandboxChild,
  verdict,
} from './lib.ts';

const RESULTS = Number(process.env.RESULTS ?? 500);
const AV_LIFE_S = Number(process.env.AV_LIFE_S ?? 3);
const BACKLOG = Number(process.env.BACKLOG ?? 3_000);
const ROUNDS = Math.max(1, Number(process.env.ROUNDS ?? 5));
const WARMUP = Math.max(0, Number(process.env.WARMUP ?? 1));
const PHASE_MARKS = process.env.PHASE_MARKS === '1';
const SEARCH_CONCURRENCY = Number(process.env.SEARCH_CONCURRENCY ?? 32);
const MEDIA_CONCURRENCY = Number(process.env.MEDIA_CONCURRENCY ?? 32);
const BASELINE_BACKLOG =
  (['paused', 'running'] as const).find((m) => m === process.env.BASELINE_BACKLOG) ?? 'gated';
const BASELINE_SEARCHES =
  (['bare'] as const).find((m) => m === process.env.BASELINE_SEARCHES) ?? 'harvest';
const PAD_BYTES = Number(process.env.PAD_BYTES ?? 100_000);
const LATENCY = process.env.LATENCY ?? '20-60';
const RESULTS_PER_SEARCH = 10;
const TARGET_SAVED = 1;
const TARGET_RATIO = 0.8;

/**
 * With PHASE_MARKS=1, prints `phase <name> <CLOCK_MONOTONIC µs>` at each phase's bounds: `perf
 * record -k CLOCK_MONOTONIC` samples can then be cut to one side's windows (`perf report
 * --time`).
 */
function mark(name: string): void {
  if (PHASE_MARKS) console.log(`phase ${name} ${process.hrtime.bigint() / 1000n}`);
}

/** When a media benchmark last removed its files, ms since the epoch (see `noteRecentCleanup`). */
const LAST_CLEANUP = path.join(tmpdir(), 'harvest-bench-media-cleanup');
/** How long the files a run removes skew the next one's harvest side (header: deleted files). */
const QUIET_MS = 7 * 60_000;

/**
 * Says so when the last run removed its files less than QUIET_MS ago: on ext4 without a journal,
 * the inodes it freed are passed over one by one while they count as recently deleted (up to six
 * minutes while their inode table block is being written, as it is while files are created next
 * to them), on harvest's side (measured: 0.13 ms of kernel CPU per file 5.3 minutes after a run,
 * none on the bare side; the ratio read 0.75 against 0.80-0.83 in runs spaced 6-7 minutes).
 */
function noteRecentCleanup(): void {
  let at: number;
  try {
    at = Number(readFileSync(LAST_CLEANUP, 'utf8'));
  } catch {
    return;
  }
  const agoMs = Date.now() - at;
  if (agoMs >= 0 && agoMs < QUIET_MS) {
    console.log(
      `note: the last media benchmark removed its files ${fixed(agoMs / 60_000, 1)} min ago; ` +
        `files created within ${QUIET_MS / 60_000} min of mass deletions cost harvest's side more (see the header)`,
    );
  }
}

/**
 * Before each phase: a full garbage collection in this process and in the sandbox, so that
 * neither side pays for a collection of the garbage the other made (an old-generation
 * collection of the sandbox, 0.1-0.3 ms of CPU per file, landed in the harvest phase in most
 * rounds).
 */
async function collectBoth(sandbox: SandboxChild): Promise<void> {
  collectGarbage();
  await sandbox.gc();
}

/** Searches planned per round: results are not all scraped (some queries answer fewer). */
const SEARCHES = Math.ceil(RESULTS / RESULTS_PER_SEARCH / 0.75);

/**
 * The round's media searches; `saveMedia: false` asks for the same formats (the same requests,
 * so the same files under fresh URLs) without a `media` section: nothing is downloaded.
 */
function mediaPipeline(round: number, saveMedia = true): string {
  const n = Array.from({ length: SEARCHES }, (_, i) => i).join(', ');
  const name = saveMedia ? `bench-media-${round}` : `bench-fresh-${round}`;
  const media = saveMedia ? 'media:\n  screenshot: true\n  audio: true\n  video: true\n' : '';
  return `name: ${name}\nrun:\n  concurrency: ${SEARCH_CONCURRENCY}\nsearches:\n  - matrix:\n      n: [${n}]\n    query: "bench media r${round} {n}"\n    limit: ${RESULTS_PER_SEARCH}\n    scrapeOptions:\n      formats: [screenshot, audio, video]\n${media}`;
}

function backlogPipeline(name: string): string {
  const n = Array.from({ length: BACKLOG }, (_, i) => i).join(', ');
  return `name: ${name}\nrun:\n  maxAttempts: 10\nsearches:\n  - matrix:\n      n: [${n}]\n    query: "${name} {n}"\n    limit: 1\n`;
}

/** Bytes per second between the first and the last file completed (the first file's not counted). */
function steadyRate(done: Array<{ at: number; bytes: number }>) {
  const sorted = [...done].sort((a, b) => a.at - b.at);
  const steadyMs = (sorted.at(-1)?.at ?? 0) - (sorted[0]?.at ?? 0);
  const steadyBytes = sorted.slice(1).reduce((sum, d) => sum + d.bytes, 0);
  return { steadyMs, bytesPerS: steadyMs > 0 ? steadyBytes / (steadyMs / 1000) : 0 };
}

interface HarvestPhase {
  runId: string;
  backlogRunId: string;
  rows: MediaRow[];
  /** First answer to last file saved, in ms. */
  windowMs: number;
  /** First to last answer of the media run's searches, in ms. */
  answersMs: number;
  /** Median wait from a search's answer to its media's jobs being queued, in ms. */
  queueDelayMs: number;
  /** Media not saved from the URL of the first answer, by kind. */
  missed: Map<string, number>;
  steadyMs: number;
  bytesPerS: number;
  /** Backlog searches finished per second during the phase. */
  searchesPerS: number;
  /** CPU ms per file saved, of the process, its main thread and the sandbox (searches included). */
  cpu: Cpu;
  firstUrlSaved: number;
  committedBeforeExpiry: number;
  reissueCalls: number;
  reissueCredits: number;
}

interface BaselinePhase {
  files: number;
  /** Files the baseline could not fetch as harvest saved them (refused, expired, other size). */
  unfetched: number;
  windowMs: number;
  steadyMs: number;
  bytesPerS: number;
  searchesPerS: number;
  /** CPU ms per file fetched, of the process, its main thread and the sandbox (searches included). */
  cpu: Cpu;
}

async function harvestPhase(runtime: Runtime, dir: string, round: number): Promise<HarvestPhase> {
  const logger = createLogger({ level: 'silent' });
  const mediaFile = path.join(dir, `media-${round}.yaml`);
  writeFileSync(mediaFile, mediaPipeline(round));
  const backlogFile = path.join(dir, `backlog-${round}.yaml`);
  writeFileSync(backlogFile, backlogPipeline(`bench-backlog-${round}`));
  const cpu0 = cpuNow();
  mark('harvest-start');
  const { runId } = await startRun(runtime, mediaFile, { logger });
  // Right behind it, a backlog that keeps every search slot busy.
  const backlog = await startRun(runtime, backlogFile, { logger });
  const t0 = performance.now();
  await waitForRun(runtime, runId, { pollMs: 250, waitForMedia: true });
  const phaseMs = performance.now() - t0;
  mark('harvest-end');
  const rows = runtime.store.media.ofRun(runId);
  const saved = rows.filter((r) => r.savedAt !== null);
  const cpu = cpuPerFile(cpu0, saved.length);
  const firstIssued = Math.min(...rows.map((r) => r.issuedAt));
  const lastSaved = Math.max(firstIssued, ...saved.map((r) => r.savedAt!));
  // URLs say when they were signed to the second: the tasks say when their answers came.
  const answered = new Map(
    [...new Set(rows.map((r) => r.taskKey))].map((key) => [
      key,
      runtime.store.tasks.get(runId, key)!.updatedAt,
    ]),
  );
  const answeredAt = [...answered.values()];
  const counts = runtime.store.mediaCounts(runId);
  // The media host serves a URL only before it expires: a file saved from the URL of the
  // first answer was fetched before that URL expired.
  const fromFirstUrl = rows.filter((r) => r.status === 'saved' && r.reissues === 0);
  const firstUrlRows = rows.filter((r) => r.reissues === 0 && r.queuedAt !== null);
  const missed = new Map<string, number>();
  for (const r of rows) {
    if (r.status !== 'saved' || r.reissues > 0) missed.set(r.kind, (missed.get(r.kind) ?? 0) + 1);
  }
  return {
    runId,
    backlogRunId: backlog.runId,
    rows,
    windowMs: lastSaved - firstIssued,
    answersMs: Math.max(...answeredAt) - Math.min(...answeredAt),
    queueDelayMs: median(firstUrlRows.map((r) => r.queuedAt! - answered.get(r.taskKey)!)),
    missed,
    ...steadyRate(saved.map((r) => ({ at: r.savedAt!, bytes: r.bytes ?? 0 }))),
    searchesPerS: runtime.store.tasks.counts(backlog.runId).done / (phaseMs / 1000),
    cpu,
    firstUrlSaved: fromFirstUrl.length,
    committedBeforeExpiry: fromFirstUrl.filter((r) => r.savedAt! < (r.expiresAt ?? 0)).length,
    reissueCalls: counts.reissueCalls,
    reissueCredits: counts.reissueCredits,
  };
}

/** A file for the baseline: a fresh URL for a row harvest saved. */
interface BareFile {
  url: string;
  bytes: number;
  /** Its URL lives less than the urgency window (harvest's search gate waits for such files). */
  urgent: boolean;
  expiresAt: number;
}

/** Hands the baseline the files of each answer as it arrives; resolves once every search is answered. */
type Feed = (push: (files: BareFile[]) => void) => Promise<{ unmatched: number }>;

/** A file of an answer, for the harvest row it is a fresh URL of. */
function bareFile(row: MediaRow, url: string, answeredAt: number, urgentLifeMs: number): BareFile {
  // Its lifetime as in the first answer, counted from this one.
  const lifeMs = (row.expiresAt ?? row.issuedAt) - row.issuedAt;
  return {
    url,
    bytes: row.bytes ?? 0,
    urgent: lifeMs < urgentLifeMs,
    expiresAt: answeredAt + lifeMs,
  };
}

/**
 * Fresh URLs from a harvest run of the round's searches without a `media` section
 * (BASELINE_SEARCHES=harvest, the default): the same requests, queued in front of the backlog
 * as the media run's were, made by the same pool, their answers stored the same way. Each
 * stored result is read back as harvest's media enqueuer reads new rows (every 50 ms) and
 * matched to the rows harvest saved by result URL and kind.
 */
function harvestFeed(
  runtime: Runtime,
  runId: string,
  rows: MediaRow[],
  urgentLifeMs: number,
): Feed {
  return async (push) => {
    const wanted = new Map(rows.map((r) => [`${r.resultUrl}\n${r.kind}`, r]));
    const db = new Database(runtime.store.path, { readonly: true });
    try {
      const fresh = db.prepare<[string, number], FreshResult>(
        `SELECT rowid AS rid, url, screenshot_url AS screenshot, audio_url AS audio,
           video_url AS video, fetched_at AS fetchedAt
         FROM results WHERE run_id = ? AND rowid > ? ORDER BY rowid`,
      );
      let after = 0;
      for (;;) {
        const c = runtime.store.tasks.counts(runId);
        const answered = c.done + c.failed === c.total;
        const found: BareFile[] = [];
        for (const r of fresh.all(runId, after)) {
          after = r.rid;
          for (const kind of ['screenshot', 'audio', 'video'] as const) {
            const url = r[kind];
            const row = url ? wanted.get(`${r.url}\n${kind}`) : undefined;
            if (!url || !row) continue;
            wanted.delete(`${r.url}\n${kind}`);
            found.push(bareFile(row, url, r.fetchedAt, urgentLifeMs));
          }
        }
        if (found.length > 0) push(found);
        if (answered) return { unmatched: wanted.size };
        await sleep(50);
      }
    } finally {
      db.close();
    }
  };
}

interface FreshResult {
  rid: number;
  url: string | null;
  screenshot: string | null;
  audio: string | null;
  video: string | null;
  fetchedAt: number;
}

/**
 * Fresh URLs from the round's searches made again by hand (BASELINE_SEARCHES=bare):
 * SEARCH_CONCURRENCY `fetch` calls at a time, outside the search queue (so never held by the
 * gate), answers neither checked nor stored.
 */
function bareFeed(
  runtime: Runtime,
  sandbox: SandboxChild,
  rows: MediaRow[],
  urgentLifeMs: number,
): Feed {
  return async (push) => {
    const byTask = new Map<string, MediaRow[]>();
    for (const r of rows) byTask.set(r.taskKey, [...(byTask.get(r.taskKey) ?? []), r]);
    const tasks = [...byTask.values()];
    let unmatched = 0;
    let nextTask = 0;
    const lane = async () => {
      for (let i = nextTask++; i < tasks.length; i = nextTask++) {
        const taskRows = tasks[i]!;
        const task = runtime.store.tasks.get(taskRows[0]!.runId, taskRows[0]!.taskKey)!;
        const res = await fetch(`${sandbox.url}/v2/search`, {
          method: 'POST',
          headers: { authorization: `Bearer ${SANDBOX_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify(task.request),
        });
        const answeredAt = Date.now();
        const body = (await res.json()) as { data: AnswerData };
        const found: BareFile[] = [];
        for (const r of taskRows) {
          const m = matchFresh(body.data, r);
          if (m.found) found.push(bareFile(r, m.url, answeredAt, urgentLifeMs));
          else unmatched += 1;
        }
        push(found);
      }
    };
    await Promise.all(Array.from({ length: SEARCH_CONCURRENCY }, lane));
    return { unmatched };
  };
}

/**
 * The baseline, within one window: the files of `feed`'s answers downloaded with a bare undici
 * stream-to-file, MEDIA_CONCURRENCY at a time, as the answers arrive, soonest expiry first (as
 * harvest's download slots serve them). `gate` is told every URGENCY_CHECK_MS whether searches
 * should wait, by the rule the media role holds the pool's search gate with (urgent media not
 * yet saved, while some file waits to start).
 */
async function bareDownload(feed: Feed, dir: string, gate: (urgent: boolean) => Promise<void>) {
  await mkdir(dir, { recursive: true });
  const agent = new Agent({ connections: MEDIA_CONCURRENCY });
  const queued: BareFile[] = [];
  let wake: Array<() => void> = [];
  let feeding = true;
  let unfetched = 0;
  let written = 0;
  const done: Array<{ at: number; bytes: number }> = [];
  const notify = () => {
    const waiting = wake;
    wake = [];
    for (const w of waiting) w();
  };
  /** Urgent files being downloaded. */
  let urgentInFlight = 0;
  let gating: Promise<void> | undefined;
  // The media role's rule: an urgent file not yet saved (waiting or downloading), and some file
  // waiting to start.
  const urgent = () => (urgentInFlight > 0 || queued.some((f) => f.urgent)) && queued.length > 0;
  const gateTimer = setInterval(() => {
    gating ??= gate(urgent()).finally(() => {
      gating = undefined;
    });
  }, URGENCY_CHECK_MS);
  const t0 = performance.now();
  const fed = feed((files) => {
    queued.push(...files);
    queued.sort((a, b) => a.expiresAt - b.expiresAt);
    notify();
  }).finally(() => {
    feeding = false;
    notify();
  });
  const next = async (): Promise<BareFile | undefined> => {
    for (;;) {
      const file = queued.shift();
      if (file || !feeding) return file;
      await new Promise<void>((resolve) => wake.push(resolve));
    }
  };
  const downloadLane = async () => {
    for (let file = await next(); file; file = await next()) {
      if (file.urgent) urgentInFlight += 1;
      const { statusCode, body } = await request(file.url, { dispatcher: agent });
      const out = createWriteStream(path.join(dir, `${written++}.bin`));
      let bytes = 0;
      body.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
      });
      await pipe(body, out);
      if (file.urgent) urgentInFlight -= 1;
      if (statusCode !== 200 || bytes !== file.bytes) unfetched += 1;
      else done.push({ at: performance.now(), bytes });
    }
  };
  try {
    await Promise.all([fed, ...Array.from({ length: MEDIA_CONCURRENCY }, downloadLane)]);
  } finally {
    clearInterval(gateTimer);
    await gating;
  }
  const { unmatched } = await fed;
  const windowMs = performance.now() - t0;
  await agent.close();
  return { unfetched: unfetched + unmatched, windowMs, ...steadyRate(done) };
}

async function baselinePhase(
  runtime: Runtime,
  sandbox: SandboxChild,
  h: HarvestPhase,
  round: number,
  dir: string,
  urgentMs: number,
): Promise<BaselinePhase> {
  const queue = runtime.searchQueue;
  let paused = false;
  const pause = async (on: boolean) => {
    if (on === paused) return;
    paused = on;
    await (on ? queue.pause() : queue.resume());
  };
  if (BASELINE_BACKLOG === 'paused') await pause(true);
  try {
    const saved = h.rows.filter((r) => r.status === 'saved');
    // As the pool's search gate does for harvest: searches wait while urgent files do.
    const gate = BASELINE_BACKLOG === 'gated' ? pause : async () => {};
    // A backlog of its own, as the harvest phase has: planning, storing and queueing BACKLOG
    // searches takes the process seconds, so each side bears it once.
    const name = `bench-backlog-${path.basename(dir)}`;
    const backlogFile = path.join(path.dirname(dir), `${name}.yaml`);
    writeFileSync(backlogFile, backlogPipeline(name));
    const logger = createLogger({ level: 'silent' });
    const freshFile = path.join(path.dirname(dir), `fresh-${round}.yaml`);
    writeFileSync(freshFile, mediaPipeline(round, false));
    const cpu0 = cpuNow();
    mark('baseline-start');
    let feed: Feed;
    if (BASELINE_SEARCHES === 'harvest') {
      const { runId } = await startRun(runtime, freshFile, { logger });
      feed = harvestFeed(runtime, runId, saved, urgentMs);
    } else feed = bareFeed(runtime, sandbox, saved, urgentMs);
    // Right behind the feed's searches, as the harvest phase queues its backlog.
    const backlog = startRun(runtime, backlogFile, { logger });
    const bare = await bareDownload(feed, dir, gate);
    mark('baseline-end');
    const files = saved.length;
    const cpu = cpuPerFile(cpu0, files - bare.unfetched);
    const backlogRunId = (await backlog).runId;
    const searchesDone = runtime.store.tasks.counts(backlogRunId).done;
    await stopRun(runtime, backlogRunId, 'cancelled');
    return { ...bare, files, cpu, searchesPerS: searchesDone / (bare.windowMs / 1000) };
  } finally {
    await pause(false);
  }
}

interface Cpu {
  process: number;
  main: number;
  sandbox: number;
}

/** The sandbox's process: it serves both sides' files and searches on the same cores. */
let sandboxPid: number | undefined;

/** CPU time of this process, of its main thread and of the sandbox, in ms. */
function cpuNow(): Cpu {
  return {
    process: readCpuMs(process.pid) ?? 0,
    main: readCpuMs(process.pid, process.pid) ?? 0,
    sandbox: sandboxPid === undefined ? 0 : (readCpuMs(sandboxPid) ?? 0),
  };
}

/** CPU ms per file between `from` and now. */
function cpuPerFile(from: Cpu, files: number): Cpu {
  const to = cpuNow();
  const per = (ms: number) => (files > 0 ? ms / files : 0);
  return {
    process: per(to.process - from.process),
    main: per(to.main - from.main),
    sandbox: per(to.sandbox - from.sandbox),
  };
}

async function main(): Promise<void> {
  if (BASELINE_BACKLOG === 'paused' && BASELINE_SEARCHES === 'harvest') {
    throw new Error(
      "BASELINE_BACKLOG=paused holds the search queue, and the baseline's own searches with it: use it with BASELINE_SEARCHES=bare",
    );
  }
  const timeScale = AV_LIFE_S / 3600;
  console.log(
    `media: ~${RESULTS} results x (screenshot, audio, video), audio/video URLs live ${AV_LIFE_S} s ` +
      `(time scale ${timeScale.toExponential(2)}), files ~${PAD_BYTES} B, backlog ${BACKLOG} searches, ` +
      `search concurrency ${SEARCH_CONCURRENCY}, media concurrency ${MEDIA_CONCURRENCY}, ` +
      `${WARMUP} warm-up + ${ROUNDS} rounds, baseline searches ${BASELINE_SEARCHES}, backlog ${BASELINE_BACKLOG} during the baseline`,
  );
  const flags = ['--time-scale', String(timeScale), '--media-pad', String(PAD_BYTES)];
  if (LATENCY !== 'none') flags.push('--latency', LATENCY);
  const sandbox = await startSandboxChild(flags, { exposeGc: true });
  sandboxPid = sandbox.child.pid;
  noteRecentCleanup();
  // Registered first, so it runs last: once the folder is gone.
  onCleanup(() => writeFileSync(LAST_CLEANUP, String(Date.now())));
  const dir = benchDir('media');
  const prefix = benchPrefix();
  const settings = loadSettings({
    ...benchEnv({ apiUrl: sandbox.url, prefix, dir }),
    HARVEST_MEDIA_CONCURRENCY: String(MEDIA_CONCURRENCY),
    ...(process.env.HARVEST_MEDIA_URGENT_MS
      ? { HARVEST_MEDIA_URGENT_MS: process.env.HARVEST_MEDIA_URGENT_MS }
      : {}),
  });
  const runtime = await openRuntime(settings);
  closer(() => runtime.close());
  const pool = await startLocalPool(settings, {
    roles: ['search', 'store', 'media'],
    concurrency: SEARCH_CONCURRENCY,
    store: runtime.store,
    logger: createLogger({ level: 'silent' }),
  });
  closer(() => pool.close());

  // Every round (warm-up ones first): the figures of keeping media safe count them all.
  const all: Array<{ h: HarvestPhase; b: BaselinePhase; ratio: number }> = [];
  let backlogEnded = false;
  for (let round = 1; round <= WARMUP + ROUNDS; round++) {
    await collectBoth(sandbox);
    const h = await harvestPhase(runtime, dir, round);
    // The baseline queues its searches and a backlog of its own, as the harvest phase did: the
    // rest of this backlog would stand in front of them.
    const backlogDone = runtime.store.tasks.counts(h.backlogRunId).done;
    if (backlogDone >= BACKLOG) backlogEnded = true;
    else await stopRun(runtime, h.backlogRunId, 'cancelled');
    await collectBoth(sandbox);
    const b = await baselinePhase(
      runtime,
      sandbox,
      h,
      round,
      path.join(dir, `bare-${round}`),
      settings.media.urgentMs,
    );
    const ratio = b.bytesPerS > 0 ? h.bytesPerS / b.bytesPerS : 0;
    all.push({ h, b, ratio });
    const saved = h.rows.filter((r) => r.status === 'saved').length;
    console.log(
      `${round <= WARMUP ? 'warm-up round' : 'round'} ${round}: harvest ${saved}/${h.rows.length} saved, ` +
        `${pct(h.firstUrlSaved / Math.max(1, h.rows.length))} before expiry, ` +
        `${fixed(h.bytesPerS / 1e6)} MB/s (${fixed(h.searchesPerS, 0)} searches/s); ` +
        `baseline ${fixed(b.bytesPerS / 1e6)} MB/s (${fixed(b.searchesPerS, 0)} searches/s, ` +
        `${b.unfetched} not fetched); ratio ${fixed(ratio)}; CPU ms per file ` +
        `${fixed(h.cpu.process)} (main ${fixed(h.cpu.main)}) against ${fixed(b.cpu.process)} ` +
        `(main ${fixed(b.cpu.main)}), first to last file ${fixed(h.steadyMs / 1000)} s against ` +
        `${fixed(b.steadyMs / 1000)} s`,
    );
  }

  // The measured rounds: the first round of a process runs code the JIT has not compiled yet, on
  // both sides of the sandbox, and only its harvest phase pays for that.
  const rounds = all.slice(WARMUP);
  const ledger = await sandbox.ledger();
  const med = (f: (r: (typeof rounds)[number]) => number) => median(rounds.map(f));
  const items = med((r) => r.h.rows.length);
  const share = med((r) => r.h.firstUrlSaved / Math.max(1, r.h.rows.length));
  const committedShare = med((r) => r.h.committedBeforeExpiry / Math.max(1, r.h.rows.length));
  const minShare = Math.min(...all.map((r) => r.h.firstUrlSaved / Math.max(1, r.h.rows.length)));
  // A baseline that could not fetch every file (it was slow enough for fresh URLs to expire
  // before it reached them) measured other files: its round's ratio is shown, not counted.
  const whole = rounds.filter((r) => r.b.unfetched === 0);
  const ratio = median((whole.length > 0 ? whole : rounds).map((r) => r.ratio));
  const sum = (f: (r: (typeof rounds)[number]) => number) => all.reduce((a, r) => a + f(r), 0);
  const s = (ms: number) => `${fixed(ms / 1000, 2)} s`;
  printBlock(`media (medians of ${ROUNDS} rounds after ${WARMUP} warm-up)`, [
    ['', 'harvest', 'bare undici'],
    ['media items', String(items), String(med((r) => r.b.files))],
    [
      'not fetched (refused, expired, other size; all rounds)',
      '-',
      String(sum((r) => r.b.unfetched)),
    ],
    ['saved before expiry (from the first URL)', pct(share), '-'],
    ['  ... lowest round', pct(minShare), '-'],
    [
      '  ... missed, by kind (all rounds)',
      ['screenshot', 'audio', 'video']
        .map((kind) => `${kind} ${sum((r) => r.h.missed.get(kind) ?? 0)}`)
        .join(', '),
      '-',
    ],
    ['  ... its row committed before the expiry too', pct(committedShare), '-'],
    ['re-issue calls (all rounds)', String(sum((r) => r.h.reissueCalls)), '-'],
    ['re-issue credits (all rounds)', String(sum((r) => r.h.reissueCredits)), '-'],
    ['first to last answer of the media run', s(med((r) => r.h.answersMs)), '-'],
    ['answer to media job queued', s(med((r) => r.h.queueDelayMs)), '-'],
    [
      'first answer (or request) to last file',
      s(med((r) => r.h.windowMs)),
      s(med((r) => r.b.windowMs)),
    ],
    ['first to last file', s(med((r) => r.h.steadyMs)), s(med((r) => r.b.steadyMs))],
    [
      'MB/s (first to last file)',
      fixed(med((r) => r.h.bytesPerS) / 1e6),
      fixed(med((r) => r.b.bytesPerS) / 1e6),
    ],
    [
      'backlog searches/s during the phase',
      fixed(
        med((r) => r.h.searchesPerS),
        0,
      ),
      fixed(
        med((r) => r.b.searchesPerS),
        0,
      ),
    ],
    [
      'CPU ms per file: process (main thread)',
      `${fixed(med((r) => r.h.cpu.process))} (${fixed(med((r) => r.h.cpu.main))})`,
      `${fixed(med((r) => r.b.cpu.process))} (${fixed(med((r) => r.b.cpu.main))})`,
    ],
    [
      'CPU ms per file: sandbox (serves both sides)',
      fixed(med((r) => r.h.cpu.sandbox)),
      fixed(med((r) => r.b.cpu.sandbox)),
    ],
    [
      'throughput ratio, each round (* not counted)',
      rounds.map((r) => `${fixed(r.ratio)}${r.b.unfetched > 0 ? '*' : ''}`).join(' '),
      '-',
    ],
    ['429 answers (sandbox)', String(ledger.teams.sandbox?.calls['429'] ?? 0), '-'],
    ['media requests with Authorization', String(ledger.media.withAuthorization), '-'],
  ]);
  console.log('');
  console.log(
    verdict(
      minShare >= TARGET_SAVED,
      `saved before expiry ${pct(minShare)} in the lowest of all ${all.length} rounds (target 100%)`,
    ),
  );
  console.log(
    verdict(
      ratio >= TARGET_RATIO,
      `throughput ratio ${fixed(ratio)} median of ${whole.length > 0 ? whole.length : rounds.length} rounds (target >= ${TARGET_RATIO})`,
    ),
  );
  if (whole.length === 0) {
    console.log('note: in every round the baseline missed files; the ratio counts them all');
  }
  if (backlogEnded) {
    console.log(
      'note: a backlog ended before its round did; raise BACKLOG to keep the search queue saturated',
    );
  }
}

runBench(main);
