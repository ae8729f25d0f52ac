/**
 * The download path alone: FILES files of about PAD_BYTES each, fetched from a local HTTP server
 * (a child process) by harvest's downloader (src/media/download.ts: guarded agent, download
 * slots, hashing, type checks, a partial file made durable and moved to its content address)
 * and by a bare undici stream-to-file, CONCURRENCY at a time each. No queue, no database, no
 * searches: what media.bench.ts measures with all of those around it, this measures without,
 * so a change to the download path shows in figures that the rest of the pool does not drown.
 *
 * Rounds alternate (harvest, then bare, ROUNDS times, default 5); each round fetches files of
 * its own (no file is stored already). Printed, medians of the rounds:
 * - CPU ms per file of this process (the server's is its own), and files per second;
 * - the ratios harvest / bare of both.
 *
 * The page cache skews the bare side (its writes are never fsynced): run on an emptied cache,
 * `sync; echo 3 > /proc/sys/vm/drop_caches`, as for media.bench.ts.
 *
 * Files deleted in the last minutes slow every file creation on ext4 without a journal, more
 * on one side than the other: leave seven minutes between runs (see media.bench.ts).
 *
 * Run: `npx tsx test/bench/media-download.bench.ts`
 * Knobs (env): FILES (2000), PAD_BYTES (100000), CONCURRENCY (32), ROUNDS (5).
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline as pipe } from 'node:stream/promises';
import { Agent, request } from 'undici';
import { createGuardedAgent } from '../../src/media/agent.ts';
import { createDownloader } from '../../src/media/download.ts';
import { DownloadSlots } from '../../src/media/slots.ts';
import { mediaRoot } from '../../src/media/storage.ts';
import {
  benchDir,
  closer,
  fixed,
  median,
  printBlock,
  readCpuMs,
  runBench,
  spawnNode,
  waitForOutput,
} from './lib.ts';

const FILES = Number(process.env.FILES ?? 2000);
const PAD_BYTES = Number(process.env.PAD_BYTES ?? 100_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const ROUNDS = Math.max(1, Number(process.env.ROUNDS ?? 5));

/**
 * The media host: a PNG of about PAD_BYTES for every path, its bytes made from the path, so
 * every file is new to the content-addressed store.
 */
const SERVER = `
const http = require('node:http');
const pad = Buffer.alloc(${PAD_BYTES}, 7);
const head = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
http.createServer((req, res) => {
  const body = Buffer.concat([head, Buffer.from(req.url), pad]);
  res.writeHead(200, { 'content-type': 'image/png', 'content-length': body.length });
  res.end(body);
}).listen(0, '127.0.0.1', function () {
  console.log('listening on http://127.0.0.1:' + this.address().port);
});
`;

interface Side {
  cpuMsPerFile: number;
  filesPerS: number;
}

/** Runs `fetchOne` for `urls`, CONCURRENCY lanes; CPU and wall time of this process. */
async function measure(urls: string[], lanes: number, fetchOne: (url: string) => Promise<void>) {
  let next = 0;
  const cpu0 = readCpuMs(process.pid) ?? 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (let i = next++; i < urls.length; i = next++) await fetchOne(urls[i]!);
    }),
  );
  const wallMs = performance.now() - t0;
  const cpuMs = (readCpuMs(process.pid) ?? 0) - cpu0;
  return { cpuMsPerFile: cpuMs / urls.length, filesPerS: urls.length / (wallMs / 1000) };
}

async function main(): Promise<void> {
  console.log(
    `media downloads: ${FILES} files of ~${PAD_BYTES} B, ${CONCURRENCY} at a time, ${ROUNDS} rounds`,
  );
  const server = spawnNode(['-e', SERVER]);
  const base = (await waitForOutput(server, 'stdout', /listening on (http:\/\/\S+)/))[1]!;
  const dir = benchDir('media-download');
  const root = mediaRoot(dir, 'media');

  const agent = createGuardedAgent({ allowedHosts: ['127.0.0.1'], connections: CONCURRENCY });
  closer(() => agent.close());
  const slots = new DownloadSlots(CONCURRENCY);
  const downloader = createDownloader({ agent, slots });
  const bareAgent = new Agent({ connections: CONCURRENCY });
  closer(() => bareAgent.close());

  const urls = (side: string, round: number) =>
    Array.from({ length: FILES }, (_, i) => `${base}/${side}-${round}-${i}.png`);
  const harvest: Side[] = [];
  const bare: Side[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // As the media role does: more downloads in hand than slots (MEDIA_JOBS_PER_SLOT).
    const h = await measure(urls('h', round), CONCURRENCY * 3, async (url) => {
      await downloader.download({
        url,
        kind: 'screenshot',
        maxBytes: PAD_BYTES * 2,
        dataDir: dir,
        root,
        owner: 'bench',
      });
    });
    const bareDir = path.join(dir, `bare-${round}`);
    await mkdir(bareDir, { recursive: true });
    let written = 0;
    const b = await measure(urls('b', round), CONCURRENCY, async (url) => {
      const { body } = await request(url, { dispatcher: bareAgent });
      await pipe(body, createWriteStream(path.join(bareDir, `${written++}.bin`)));
    });
    harvest.push(h);
    bare.push(b);
    console.log(
      `round ${round}: harvest ${fixed(h.cpuMsPerFile, 3)} ms CPU/file, ${fixed(h.filesPerS, 0)} files/s; ` +
        `bare ${fixed(b.cpuMsPerFile, 3)} ms, ${fixed(b.filesPerS, 0)} files/s`,
    );
  }
  const med = (sides: Side[], f: (s: Side) => number) => median(sides.map(f));
  const hCpu = med(harvest, (s) => s.cpuMsPerFile);
  const bCpu = med(bare, (s) => s.cpuMsPerFile);
  const hRate = med(harvest, (s) => s.filesPerS);
  const bRate = med(bare, (s) => s.filesPerS);
  printBlock(`media downloads (medians of ${ROUNDS} rounds)`, [
    ['', 'harvest', 'bare undici', 'harvest / bare'],
    ['CPU ms per file (this process)', fixed(hCpu, 3), fixed(bCpu, 3), fixed(hCpu / bCpu)],
    ['files per second', fixed(hRate, 0), fixed(bRate, 0), fixed(hRate / bRate)],
  ]);
}

runBench(main);
