/**
 * Media end to end on real parts: the sandbox's signed URLs (expiring for real, scaled by
 * `timeScale`), Redis, SQLite, and pools with the media role.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyFiles } from '../../src/media/verify.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import type { MediaRow } from '../../src/store/index.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { startMediaHost } from '../helpers/media-host.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const ALL_ROLES = ['search', 'store', 'media'] as const;

function pipeline(name: string, n: number, formats: string, extra = ''): string {
  return `name: ${name}
searches:
  - matrix:
      n: [${Array.from({ length: n }, (_, i) => i).join(', ')}]
    query: "media capture {n}"
    limit: 3
    scrapeOptions:
      formats: [${formats}]${extra}
media:
${formats
  .split(',')
  .map((f) => f.trim())
  .filter((f) => ['screenshot', 'audio', 'video'].includes(f))
  .map((f) => `  ${f}: true`)
  .join('\n')}${extra ? '\n  actions: true' : ''}
`;
}

/** `<id>.<ext>`: the sandbox's name for the file behind a URL. */
const fileOf = (url: string) => path.basename(new URL(url).pathname);

function rows(harness: Harness, runId: string): MediaRow[] {
  return harness.runtime.store.media.ofRun(runId);
}

function ledgerCredits(harness: Harness): number {
  return harness.sandbox.ledger().teams.sandbox?.creditsCharged ?? 0;
}

/** Waits until no media row of the run is pending (or the time is up). */
async function mediaSettled(harness: Harness, runId: string, timeoutMs = 30_000) {
  const pending = () => harness.runtime.store.mediaSummary(runId)?.pending ?? 0;
  await waitFor(`no media of ${runId} pending`, pending, {
    until: (n) => n === 0,
    timeoutMs,
    intervalMs: 50,
  });
}

describe('media', () => {
  it('saves every requested file (fields and action outputs) with the hash the sandbox served, never sending Authorization', async () => {
    h = await startHarness();
    await h.startPool({ roles: [...ALL_ROLES] });
    const file = h.writePipeline(
      'all',
      pipeline(
        'it-media-all',
        6,
        'markdown, screenshot, audio, video',
        '\n      actions: [{type: screenshot}, {type: pdf}]',
      ),
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50, waitForMedia: true });
    expect(final.status).toBe('completed');

    const all = rows(h, runId);
    const kinds = new Set(all.map((r) => r.kind));
    expect(kinds).toEqual(
      new Set(['screenshot', 'audio', 'video', 'action-screenshot', 'action-pdf']),
    );
    // Every scraped result of the run has its media requested.
    const scraped = [...h.runtime.store.iterateResults(runId)].filter((r) => r.screenshotUrl);
    expect(all.filter((r) => r.kind === 'screenshot')).toHaveLength(scraped.length);
    const ledger = h.sandbox.ledger().media;
    for (const row of all) {
      expect(row.status, `${row.kind} ${row.errorMessage}`).toBe('saved');
      expect(row.sha256).toBe(ledger.served[fileOf(row.sourceUrl)]);
      expect(row.reissues).toBe(0);
      expect(row.savedAt!).toBeLessThanOrEqual(row.deadlineAt);
    }
    expect(all.find((r) => r.kind === 'action-pdf')?.contentType).toBe('application/pdf');
    expect(ledger.withAuthorization).toBe(0);
    expect(final.media).toMatchObject({ requested: all.length, saved: all.length, pending: 0 });

    const verified = await verifyFiles(h.settings.dataDir, h.runtime.store.savedFiles(runId));
    expect(verified.problems).toEqual([]);
    expect(verified.ok).toBe(new Set(all.map((r) => r.sha256)).size);
  });

  it('re-issues URLs that expired before their jobs ran, then saves them; re-issue credits equal the bill', async () => {
    // Audio and video live 2 s, screenshots 44 s.
    h = await startHarness({ sandbox: { timeScale: 0.0005 } });
    const searchPool = await h.startPool({ roles: ['search', 'store'] });
    const file = h.writePipeline('late', pipeline('it-media-late', 4, 'screenshot, audio, video'));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitForRun(h.runtime, runId, { pollMs: 50 });
    const searchCredits = h.runtime.store.calls.totals(runId).creditsUsed;
    expect(searchCredits).toBe(ledgerCredits(h));
    await searchPool.close();
    // A fixed duration: the test is about URLs expired (audio and video live 2 s).
    await sleep(2200);
    await h.startPool({ roles: ['store', 'media'] });
    await mediaSettled(h, runId);

    const all = rows(h, runId);
    for (const row of all) expect(row.status, `${row.kind}: ${row.errorMessage}`).toBe('saved');
    const late = all.filter((r) => r.kind !== 'screenshot');
    expect(late.length).toBeGreaterThan(0);
    for (const row of late) expect(row.reissues).toBe(1);
    for (const row of all.filter((r) => r.kind === 'screenshot')) expect(row.reissues).toBe(0);

    const counts = h.runtime.store.mediaCounts(runId);
    expect(counts.reissueCalls).toBeGreaterThan(0);
    // One call serves every expired item of its task.
    expect(counts.reissueCalls).toBeLessThanOrEqual(new Set(late.map((r) => r.taskKey)).size);
    expect(counts.reissueCredits).toBe(ledgerCredits(h) - searchCredits);
    expect(h.runtime.store.calls.totals(runId).creditsUsed).toBe(ledgerCredits(h));
    const ledger = h.sandbox.ledger().media;
    for (const row of all) expect(row.sha256).toBe(ledger.served[fileOf(row.sourceUrl)]);
  });

  it("records a tampered URL as failed with the host's reason once the re-issue limit is spent", async () => {
    h = await startHarness({
      sandbox: { mediaFaults: { tamper: 1 } },
      env: { HARVEST_MEDIA_MAX_REISSUES: '2' },
    });
    await h.startPool({ roles: [...ALL_ROLES] });
    const file = h.writePipeline('tampered', pipeline('it-media-tampered', 2, 'audio'));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitForRun(h.runtime, runId, { pollMs: 50, waitForMedia: true });

    const all = rows(h, runId);
    expect(all.length).toBeGreaterThan(0);
    for (const row of all) {
      expect(row).toMatchObject({
        status: 'failed',
        errorCode: 'SignatureDoesNotMatch',
        reissues: 2,
        sha256: null,
      });
      expect(row.errorMessage).toMatch(
        /^media host answered 403 SignatureDoesNotMatch: The request signature we calculated does not match .* \(after 2 fresh URLs, the most allowed\)$/,
      );
    }
    const counts = h.runtime.store.mediaCounts(runId);
    const tasks = new Set(all.map((r) => r.taskKey)).size;
    expect(counts.reissueCalls).toBeGreaterThanOrEqual(2 * tasks);
    expect(counts.reissueCalls).toBeLessThanOrEqual(2 * all.length);
    expect(counts.failures).toEqual([
      expect.objectContaining({
        status: 'failed',
        code: 'SignatureDoesNotMatch',
        count: all.length,
      }),
    ]);
    // Every search the sandbox answered is a recorded call, with the credits it billed.
    const team = h.sandbox.ledger().teams.sandbox!;
    expect(h.runtime.store.calls.totals(runId)).toMatchObject({
      calls: team.calls['200'],
      creditsUsed: team.creditsCharged,
    });
  });

  it('removes partial files of dead workers while it runs, not only when it starts', async () => {
    h = await startHarness();
    const pool = await h.startPool({ roles: [...ALL_ROLES], media: { partialSweepMs: 100 } });
    const file = h.writePipeline('sweep', pipeline('it-media-sweep', 1, 'screenshot'));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitForRun(h.runtime, runId, { pollMs: 50, waitForMedia: true });
    // A worker restarted at once after a crash: the dead one's partial file appears after this
    // pool started (its owner's heartbeat had not lapsed then), next to one of this pool's own.
    const partials = path.join(h.settings.dataDir, 'media', '.partial');
    mkdirSync(partials, { recursive: true });
    const dead = path.join(partials, 'vm-gone-1--a.part');
    const own = path.join(partials, `${pool.workerId}--b.part`);
    writeFileSync(dead, 'half a file');
    writeFileSync(own, 'a download in flight');
    await waitFor("the dead worker's partial file swept", () => !existsSync(dead), {
      timeoutMs: 5000,
      intervalMs: 50,
    });
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(own)).toBe(true);
  });

  it('refuses, without fetching, a media URL whose host resolves to a refused address', async () => {
    const host = await startMediaHost('127.0.0.2', (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' }).end('never sent');
    });
    try {
      h = await startHarness();
      await h.startPool({
        roles: ['store', 'media'],
        media: {
          resolve: async (name) => {
            if (name !== 'media.test') throw new Error(`unexpected lookup of ${name}`);
            return [{ address: '127.0.0.2', family: 4 }];
          },
        },
      });
      const file = h.writePipeline('refused', pipeline('it-media-refused', 1, 'screenshot'));
      // The run is planned, and a worker's answer points at the refused host.
      const { runId } = await startRun(h.runtime, file, { logger: h.logger });
      const [task] = [...h.runtime.store.tasks.unfinished(runId)];
      await h.runtime.searchQueue.obliterate({ force: true });
      h.runtime.store.applyEvents([
        {
          type: 'results',
          runId,
          taskKey: task!.key,
          callId: '0190f000-0000-7000-8000-000000000001',
          fetchedAt: Date.now(),
          items: [
            {
              source: 'web',
              position: 0,
              item: {
                url: 'https://a.example/',
                screenshot: `http://media.test:${host.port}/s.png`,
              },
            },
          ],
        },
      ]);
      await mediaSettled(h, runId);
      const [row] = rows(h, runId);
      expect(row).toMatchObject({ status: 'failed', errorCode: 'MEDIA_ADDRESS_REFUSED' });
      expect(row!.errorMessage).toContain(
        'media.test (127.0.0.2): loopback addresses are not media hosts',
      );
      expect(host.connections).toBe(0);
    } finally {
      await host.close();
    }
  });

  it('records an item whose result the re-issued search no longer returns as failed, saying so', async () => {
    h = await startHarness();
    await h.startPool({ roles: ['store', 'media'] });
    const file = h.writePipeline('gone', pipeline('it-media-gone', 1, 'audio'));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const [task] = [...h.runtime.store.tasks.unfinished(runId)];
    await h.runtime.searchQueue.obliterate({ force: true });
    // An answer stored a result whose audio URL expired long ago.
    const expired = `${h.sandbox.url}/media/0123456789abcdef0123456789abcdef.mp3?X-Goog-Date=20200101T000000Z&X-Goog-Expires=60&X-Goog-Signature=0`;
    h.runtime.store.applyEvents([
      {
        type: 'results',
        runId,
        taskKey: task!.key,
        callId: '0190f000-0000-7000-8000-000000000002',
        fetchedAt: Date.now(),
        items: [
          { source: 'web', position: 0, item: { url: 'https://gone.example/x', audio: expired } },
        ],
      },
    ]);
    await mediaSettled(h, runId);
    const [row] = rows(h, runId);
    expect(row).toMatchObject({
      status: 'failed',
      errorCode: 'RESULT_GONE',
      errorMessage: 'the re-issued search no longer returns https://gone.example/x',
      reissues: 0,
    });
    // The re-issue was a recorded call, with what the sandbox billed for it.
    const counts = h.runtime.store.mediaCounts(runId);
    expect(counts.reissueCalls).toBe(1);
    expect(counts.reissueCredits).toBe(ledgerCredits(h));
    expect(h.sandbox.ledger().media.requests).toBe(0);
  });

  it('retries transient failures of the media host with backoff, and saves every file', async () => {
    h = await startHarness({ sandbox: { mediaFaults: { error503: 0.25 } } });
    await h.startPool({ roles: [...ALL_ROLES] });
    const file = h.writePipeline('flaky', pipeline('it-media-flaky', 3, 'screenshot, audio'));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitForRun(h.runtime, runId, { pollMs: 50, waitForMedia: true });
    const all = rows(h, runId);
    for (const row of all) {
      expect(row.status, `${row.kind}: ${row.errorMessage}`).toBe('saved');
      expect(row.reissues).toBe(0);
    }
    // Some downloads met a 503 first: each retry counts as an attempt.
    expect(h.sandbox.ledger().media.calls['503']).toBeGreaterThan(0);
    const attempts = all.reduce((n, r) => n + r.attempts, 0);
    expect(attempts).toBe(all.length + (h.sandbox.ledger().media.calls['503'] ?? 0));
  });
});
