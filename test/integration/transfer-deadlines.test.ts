/**
 * Every transfer has a deadline: a media host and an API body that trickle one byte a second
 * end by theirs, the media slot is freed for a good URL queued behind, and Ctrl-C ends a
 * `run --local` within its grace period. Failed media is queued again with no new call
 * (`harvest media retry`). Real Redis, the sandbox, loopback media hosts, temp SQLite.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.ts';
import { TimeoutError } from '../../src/api/errors.ts';
import { createGuardedAgent } from '../../src/media/agent.ts';
import { createDownloader } from '../../src/media/download.ts';
import { MediaError } from '../../src/media/errors.ts';
import { mediaRoot } from '../../src/media/storage.ts';
import { startRun } from '../../src/run/start.ts';
import { mediaBytes } from '../../src/sandbox/media-bytes.ts';
import { runCli, spawnCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { type MediaHost, startMediaHost } from '../helpers/media-host.ts';
import { tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
let host: MediaHost | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
  await h?.stop();
  h = undefined;
}, 60_000);

const PNG = mediaBytes('screenshot', 'a trickled image');

/** Sends `bytes` one a second until the client goes; `trickling()` says whether it still does. */
function trickle(res: ServerResponse, bytes: Buffer): void {
  res.writeHead(200, { 'content-type': 'image/png', 'content-length': bytes.length });
  let at = 0;
  const tick = setInterval(() => {
    if (at >= bytes.length) return clearInterval(tick);
    res.write(bytes.subarray(at, at + 1));
    at += 1;
  }, 1000);
  res.on('close', () => clearInterval(tick));
}

const searchCalls = (harness: Harness) => {
  const calls = harness.sandbox.ledger().teams.sandbox?.calls ?? {};
  return Object.values(calls).reduce((a, b) => a + b, 0);
};

describe('transfer deadlines', () => {
  it('a trickling media host is cut off at the longest transfer; a good URL queued behind is saved; `media retry` saves the rest with no new call', async () => {
    const state = { slow: true };
    host = await startMediaHost('127.0.0.1', (req, res) => {
      if (req.url?.startsWith('/slow') && state.slow) trickle(res, PNG);
      else res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    });
    h = await startHarness({
      env: {
        HARVEST_MEDIA_CONCURRENCY: '2',
        HARVEST_MEDIA_MAX_TRANSFER_MS: '1500',
        HARVEST_MEDIA_MAX_ATTEMPTS: '1',
        HARVEST_MEDIA_ALLOW_HOSTS: `127.0.0.1:${host.port}`,
      },
    });
    await h.startPool({ roles: ['store', 'media'] });
    const file = h.writePipeline(
      'trickle',
      'name: it-media-trickle\nsearches:\n  - query: "trickle"\n    limit: 3\n    scrapeOptions:\n      formats: [screenshot]\nmedia:\n  screenshot: true\n',
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const [task] = [...h.runtime.store.tasks.unfinished(runId)];
    await h.runtime.searchQueue.obliterate({ force: true });
    // Two trickling URLs take both slots first; the good one waits behind them.
    const urls = ['/slow-a.png', '/slow-b.png', '/good.png'].map((p) => `${host!.url}${p}`);
    h.runtime.store.applyEvents([
      {
        type: 'results',
        runId,
        taskKey: task!.key,
        callId: '0190f000-0000-7000-8000-000000000033',
        fetchedAt: Date.now(),
        items: urls.map((screenshot, position) => ({
          source: 'web' as const,
          position,
          item: { url: `https://r${position}.example/`, screenshot },
        })),
      },
    ]);
    const callsBefore = searchCalls(h);
    const rows = () => h!.runtime.store.media.ofRun(runId);
    await waitFor('every media row of the run to end', rows, {
      until: (r) => r.every((row) => row.status !== 'pending'),
    });
    const bySource = new Map(rows().map((r) => [new URL(r.sourceUrl).pathname, r]));
    expect(bySource.get('/good.png')?.status).toBe('saved');
    for (const slow of ['/slow-a.png', '/slow-b.png']) {
      const row = bySource.get(slow)!;
      expect(row).toMatchObject({ status: 'failed', errorCode: 'MEDIA_TRANSIENT' });
      expect(row.errorMessage).toContain('cut off at the longest transfer (1500 ms');
    }

    // The host is fast again: the failed items are queued again and saved, no search made.
    state.slow = false;
    const retry = await runCli(['media', 'retry', runId], h.settings);
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stdout).toContain('queued again 2 media items');
    await waitFor('the retried media to be saved', rows, {
      until: (r) => r.every((row) => row.status === 'saved'),
    });
    expect(searchCalls(h)).toBe(callsBefore);
  }, 60_000);

  it("a trickling transfer ends by its URL's deadline when that comes first; a stopping worker's at once", async () => {
    host = await startMediaHost('127.0.0.1', (_req, res) => trickle(res, PNG));
    const tmp = tempDir('harvest-deadline');
    const agent = createGuardedAgent({ allowedHosts: [`127.0.0.1:${host.port}`] });
    const stop = new AbortController();
    const downloader = createDownloader({ agent, maxTransferMs: 60_000, signal: stop.signal });
    const input = {
      url: `${host.url}/slow.png`,
      kind: 'screenshot' as const,
      maxBytes: 1_000_000,
      dataDir: tmp.dir,
      root: mediaRoot(tmp.dir, 'media'),
      owner: 'test-worker',
    };
    const failure = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => e,
      );
    try {
      const now = Date.now();
      const late = await failure(
        downloader.download({ ...input, deadlineAt: now + 500, expiresAt: now + 3_600_000 }),
      );
      expect(late).toBeInstanceOf(MediaError);
      expect(late).toMatchObject({ code: 'MEDIA_TRANSIENT', next: 'retry' });
      expect((late as Error).message).toContain("cut off at its URL's deadline");

      const stopped = failure(downloader.download(input));
      await waitFor('the second request to reach the host', () => host!.requests.length >= 2);
      stop.abort();
      expect(await stopped).toMatchObject({ code: 'MEDIA_INTERRUPTED', next: 'stop' });
    } finally {
      await agent.close();
      tmp.remove();
    }
  });

  it('an API answer whose body trickles ends by its timeout plus the margin, as a TimeoutError', async () => {
    h = await startHarness({ sandbox: { apiTrickleBytesPerSecond: 1 } });
    const client = createApiClient({
      baseUrl: h.sandbox.url,
      apiKey: 'fc-sandbox',
      timeoutSlackMs: 500,
    });
    try {
      const error = await client.search({ query: 'trickle', limit: 1, timeout: 1000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TimeoutError);
      // The answer's headers came at once: the whole body counted, not a pause in it.
      expect(h.sandbox.ledger().teams.sandbox?.calls['200']).toBe(1);
    } finally {
      await client.close();
    }
  }, 30_000);

  it('Ctrl-C ends a `run --local` held by a trickling answer within the grace period: the call is recorded LOST', async () => {
    h = await startHarness({ sandbox: { apiTrickleBytesPerSecond: 1 } });
    const file = h.writePipeline(
      'slow-api',
      'name: it-slow-api\nsearches:\n  - query: "slow answer"\n    limit: 2\n    timeout: 60000\n',
    );
    const child = spawnCli(['run', file, '--local'], h.settings, { HARVEST_STOP_GRACE_MS: '2000' });
    try {
      await waitFor('the search to be answered (its body trickling)', () => searchCalls(h!) > 0, {
        timeoutMs: 30_000,
      });
      child.child.kill('SIGINT');
      // Without the grace period the stop would wait for the call's own deadline (65 s).
      const code = await Promise.race([
        child.exited,
        new Promise<'alive'>((resolve) => setTimeout(() => resolve('alive'), 25_000).unref()),
      ]);
      expect(code, child.stderr()).toBe(4);
    } finally {
      child.child.kill('SIGKILL');
    }
    const [run] = h.runtime.store.runs.list({ limit: 1 });
    const report = h.runtime.store.runStatus(run!.id);
    expect(report?.run.status).toBe('interrupted');
    expect(report?.errors.callsByCode).toEqual({ LOST: 1 });
  }, 60_000);

  it('Ctrl-C ends a `run --local` downloading from a trickling media host at once: the download is aborted, no attempt spent', async () => {
    h = await startHarness({ sandbox: { mediaFaults: { bytesPerSecond: 1 } } });
    const file = h.writePipeline(
      'slow-media',
      'name: it-slow-media\nsearches:\n  - query: "slow media"\n    limit: 2\n    scrapeOptions:\n      formats: [screenshot]\nmedia:\n  screenshot: true\n',
    );
    // A grace period far longer than the wait below: the stop must not need it.
    const child = spawnCli(['run', file, '--local'], h.settings, {
      HARVEST_STOP_GRACE_MS: '600000',
    });
    try {
      await waitFor('a media download under way', () => h!.sandbox.ledger().media.requests > 0, {
        timeoutMs: 30_000,
      });
      child.child.kill('SIGINT');
      const code = await Promise.race([
        child.exited,
        new Promise<'alive'>((resolve) => setTimeout(() => resolve('alive'), 25_000).unref()),
      ]);
      // Ended by the graceful stop itself (its exit code is the run's: done, or interrupted).
      expect(code, child.stderr()).not.toBe('alive');
      expect(child.stderr()).not.toContain('stopping now');
    } finally {
      child.child.kill('SIGKILL');
    }
    const [run] = h.runtime.store.runs.list({ limit: 1 });
    const rows = h.runtime.store.media.ofRun(run!.id);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row).toMatchObject({ status: 'pending', attempts: 0 });
  }, 60_000);

  it('SIGTERM ends a `harvest worker` held by a trickling answer once the grace period is over', async () => {
    h = await startHarness({ sandbox: { apiTrickleBytesPerSecond: 1 } });
    const file = h.writePipeline(
      'slow-worker',
      'name: it-slow-worker\nsearches:\n  - query: "slow answer"\n    limit: 2\n    timeout: 60000\n',
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const worker = spawnCli(['worker', '--roles', 'search,store'], h.settings, {
      HARVEST_STOP_GRACE_MS: '2000',
    });
    try {
      await waitFor('the search to be answered (its body trickling)', () => searchCalls(h!) > 0, {
        timeoutMs: 30_000,
      });
      worker.child.kill('SIGTERM');
      const code = await Promise.race([
        worker.exited,
        new Promise<'alive'>((resolve) => setTimeout(() => resolve('alive'), 25_000).unref()),
      ]);
      expect(code, worker.stderr()).toBe(4);
    } finally {
      worker.child.kill('SIGKILL');
    }
    expect(h.runtime.store.runStatus(runId)?.errors.callsByCode).toEqual({ LOST: 1 });
  }, 60_000);
});
