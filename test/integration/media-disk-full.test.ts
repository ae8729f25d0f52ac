/**
 * A full disk pauses the media queue, with the reason in `harvest status`, and spends no
 * attempt; once there is room, `harvest media retry` resumes it and the files are saved with no
 * new search. The disk is a real one: a small tmpfs, full for real (ENOSPC from the kernel).
 * Mounting needs root; where it is not permitted the test is skipped, saying why.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { mediaPauseOf } from '../../src/queue/media-pause.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { runCli, spawnCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait.ts';

/** Mounts a tmpfs of `size` on a fresh folder; its path and its removal. */
function mountTmpfs(size: string): { dir: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harvest-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    fs.rmdirSync(dir);
    throw error;
  }
  return {
    dir,
    remove() {
      execFileSync('umount', [dir], { stdio: 'pipe' });
      fs.rmdirSync(dir);
    },
  };
}

/** Why a tmpfs cannot be mounted here; undefined when it can. */
function mountRefused(): string | undefined {
  try {
    mountTmpfs('64k').remove();
    return undefined;
  } catch (error) {
    const text = (error as { stderr?: Buffer }).stderr?.toString().trim() || String(error);
    return `mounting a tmpfs is not permitted here (needs root): ${text}`;
  }
}

/** Fills the folder's file system until the kernel says ENOSPC; the filler file. */
function fill(dir: string): string {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const block = Buffer.alloc(4096, 1);
  try {
    for (;;) fs.writeSync(fd, block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

const refused = mountRefused();
let h: Harness | undefined;
let disk: ReturnType<typeof mountTmpfs> | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
  disk?.remove();
  disk = undefined;
}, 60_000);

const searchCalls = (harness: Harness) => {
  const calls = harness.sandbox.ledger().teams.sandbox?.calls ?? {};
  return Object.values(calls).reduce((a, b) => a + b, 0);
};

it.skipIf(refused !== undefined)(
  `a full disk pauses the media queue without spending attempts; \`media retry\` saves the files with no new call${refused ? ` (skipped: ${refused})` : ''}`,
  async () => {
    disk = mountTmpfs('2m');
    h = await startHarness({ sandbox: { mediaPadBytes: 16 * 1024 } });
    // The database stays on the harness's disk; the media folder is on the full one.
    await h.startPool({
      roles: ['search', 'store', 'media'],
      settings: { dataDir: disk.dir },
    });
    const filler = fill(disk.dir);
    const file = h.writePipeline(
      'full',
      'name: it-disk-full\nsearches:\n  - matrix:\n      n: [0, 1]\n    query: "full disk {n}"\n    limit: 2\n    scrapeOptions:\n      formats: [screenshot]\nmedia:\n  screenshot: true\n',
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitForRun(h.runtime, runId, { pollMs: 50 });
    const pause = await waitFor('the media queue to pause for the full disk', () =>
      mediaPauseOf(h!.runtime.redis, h!.runtime.keys),
    );
    expect(pause.code).toBe('MEDIA_DISK_FULL');
    expect(pause.reason).toContain('ENOSPC');
    const rows = () => h!.runtime.store.media.ofRun(runId);
    expect(rows().length).toBeGreaterThan(0);
    for (const row of rows()) expect(row).toMatchObject({ status: 'pending', attempts: 0 });

    const status = await runCli(['status'], h.settings);
    expect(status.stdout).toContain('media queue paused since');
    expect(status.stdout).toContain('MEDIA_DISK_FULL');
    expect(status.stdout).toContain('harvest media retry');

    // Room again; the retry resumes the queue, and the same URLs are downloaded.
    fs.rmSync(filler);
    const callsBefore = searchCalls(h);
    const retry = await runCli(['media', 'retry', '--json'], h.settings);
    expect(retry.code, retry.stderr).toBe(0);
    expect(JSON.parse(retry.stdout)).toMatchObject({
      requeued: 0,
      expiredLeft: 0,
      resumedPause: { code: 'MEDIA_DISK_FULL' },
    });
    await waitFor('every media row to be saved', rows, {
      until: (r) => r.every((row) => row.status === 'saved'),
      timeoutMs: 30_000,
    });
    for (const row of rows()) expect(row.reissues).toBe(0);
    expect(searchCalls(h)).toBe(callsBefore);
    expect(await mediaPauseOf(h.runtime.redis, h.runtime.keys)).toBeUndefined();
  },
  60_000,
);

it.skipIf(refused !== undefined)(
  `\`run --local\` on a full disk ends (exit 4) saying the media queue is paused and how to go on${refused ? ` (skipped: ${refused})` : ''}`,
  async () => {
    disk = mountTmpfs('2m');
    h = await startHarness({ sandbox: { mediaPadBytes: 16 * 1024 } });
    const filler = fill(disk.dir);
    const file = h.writePipeline(
      'full-local',
      'name: it-disk-full-local\nsearches:\n  - query: "full disk local"\n    limit: 2\n    scrapeOptions:\n      formats: [screenshot]\nmedia:\n  screenshot: true\n',
    );
    const run = spawnCli(['run', file, '--local'], h.settings, { HARVEST_DATA_DIR: disk.dir });
    const code = await Promise.race([
      run.exited,
      new Promise<'alive'>((resolve) => setTimeout(() => resolve('alive'), 40_000).unref()),
    ]);
    run.child.kill('SIGKILL');
    expect(code, run.stderr()).toBe(4);
    expect(run.stdout()).toContain('PAUSED  media queue, MEDIA_DISK_FULL');
    expect(run.stdout()).toContain('harvest media retry');

    fs.rmSync(filler);
    const retry = await runCli(['media', 'retry'], h.settings);
    expect(retry.stdout).toContain('media queue resumed');
    const callsBefore = searchCalls(h);
    await h.startPool({ roles: ['store', 'media'], settings: { dataDir: disk.dir } });
    const [only] = h.runtime.store.runs.list({ limit: 1 });
    await waitFor(
      'the media to be saved once a media worker runs',
      () => h!.runtime.store.media.ofRun(only!.id),
      { until: (r) => r.length > 0 && r.every((row) => row.status === 'saved'), timeoutMs: 30_000 },
    );
    expect(searchCalls(h)).toBe(callsBefore);
  },
  90_000,
);
