/**
 * A media worker killed with SIGKILL in the middle of a download: the partial file never
 * counts as saved, and after a restart the file is saved once and verifies.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { HELD_BYTES_MAX } from '../../src/media/download.ts';
import { partialOwner } from '../../src/media/storage.ts';
import { verifyFiles } from '../../src/media/verify.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, harvestEnv, startHarness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait.ts';

const BIN = path.resolve('bin/harvest.js');

let h: Harness | undefined;
const children = new Set<ChildProcess>();
afterEach(async () => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  await h?.stop();
  h = undefined;
});

function spawnMediaWorker(harness: Harness): ChildProcess {
  const child = spawn(
    process.execPath,
    [BIN, 'worker', '--roles', 'media', '--lock-duration', '2000', '--stalled-interval', '500'],
    {
      env: harvestEnv(harness),
      stdio: 'ignore',
    },
  );
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

it('a media worker killed mid-download: after a restart the file is saved once and verifies', async () => {
  // MP3s of 3 MiB at 2 MiB/s: past HELD_BYTES_MAX (1 MiB, src/media/download.ts) the body is
  // written to its partial file as it comes, so the kill finds one half written.
  const padBytes = 3 * HELD_BYTES_MAX;
  h = await startHarness({
    sandbox: { mediaPadBytes: padBytes, mediaFaults: { bytesPerSecond: 2 * HELD_BYTES_MAX } },
  });
  const searchPool = await h.startPool({ roles: ['search', 'store'] });
  const file = h.writePipeline(
    'crash',
    'name: it-media-crash\nsearches:\n  - query: "media crash test"\n    limit: 1\n    scrapeOptions:\n      formats: [audio]\nmedia:\n  audio: true\n',
  );
  const { runId } = await startRun(h.runtime, file, { logger: h.logger });
  await waitForRun(h.runtime, runId, { pollMs: 50 });
  const [row] = h.runtime.store.media.ofRun(runId);
  expect(row?.status).toBe('pending');

  const partials = path.join(h.dir, 'media', '.partial');
  const listPartials = () => (fs.existsSync(partials) ? fs.readdirSync(partials) : []);
  const first = spawnMediaWorker(h);
  const written = () =>
    listPartials().filter((name) => fs.statSync(path.join(partials, name)).size > 0);
  const [partial] = await waitFor('a download under way (a partial file written)', written, {
    until: (found) => found.length > 0,
    timeoutMs: 30_000,
    intervalMs: 50,
  });
  first.kill('SIGKILL');
  await new Promise((resolve) => first.once('exit', resolve));
  expect(h.runtime.store.media.get(row!.id)?.status).toBe('pending');
  expect(h.runtime.store.savedFiles(runId)).toEqual([]);

  // The dead worker's heartbeat lapses (2 s), then a new worker takes the job over.
  const owner = partialOwner(partial!)!;
  const heartbeat = () => h!.runtime.redis.exists(h!.runtime.keys.workerHeartbeat(owner));
  await waitFor(`the heartbeat of ${owner} to lapse`, heartbeat, {
    until: (n) => n === 0,
    intervalMs: 100,
  });
  h.sandbox.control.setMediaFaults({});
  spawnMediaWorker(h);
  const media = () => h!.runtime.store.media.get(row!.id);
  const saved = (await waitFor('the media row to end', media, {
    until: (now) => now !== undefined && now.status !== 'pending',
    timeoutMs: 30_000,
    intervalMs: 50,
  }))!;

  expect(saved).toMatchObject({ status: 'saved', reissues: 0 });
  // The killed download never finished, so it is not counted; the second one saved the file.
  expect(saved.attempts).toBe(1);
  const served = h.sandbox.ledger().media.served;
  expect(saved.sha256).toBe(served[path.basename(new URL(saved.sourceUrl).pathname)]);
  // One file, under its content address; the interrupted download's partial file is gone.
  const stored = fs
    .readdirSync(path.join(h.dir, 'media'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile());
  expect(stored.map((e) => e.name)).toEqual([`${saved.sha256}.mp3`]);
  expect(listPartials()).toEqual([]);
  const verified = await verifyFiles(h.dir, h.runtime.store.savedFiles(runId));
  expect(verified).toMatchObject({ files: 1, ok: 1, problems: [] });
  await searchPool.close();
}, 60_000);
