/**
 * How a media row's job meets what changes under it: re-issues asked for by several rows at
 * once, a URL past its deadline when no fresh one can be had, and a newer answer that gives a
 * row's position another result while its file downloads, or after it was saved and while its
 * job still runs. Real sandbox, Redis, SQLite and pool; a media host of the test's own on the
 * API's address (exempt from the address rule, like the sandbox) serves files it can hold back.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { mediaBytes } from '../../src/sandbox/media-bytes.ts';
import type { MediaRow } from '../../src/store/index.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { type MediaHost, startMediaHost } from '../helpers/media-host.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
let host: MediaHost | undefined;
afterEach(async () => {
  await h?.stop();
  await host?.close();
  h = undefined;
  host = undefined;
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function audioPipeline(name: string, limit: number, kinds = ['audio']): string {
  return `name: ${name}
searches:
  - query: "media rows ${name}"
    limit: ${limit}
    scrapeOptions:
      formats: [${kinds.join(', ')}]
media:
${kinds.map((k) => `  ${k}: true`).join('\n')}
`;
}

/** The held host is on loopback beside the sandbox, on another port: allowed by the setting. */
const HELD_HOST_ALLOWED = { env: { HARVEST_MEDIA_ALLOW_HOSTS: '127.0.0.1' } };

/** A media host serving an MP3 made from each path; paths under /hold/ wait for `release`. */
async function heldHost() {
  const held = new Map<string, ServerResponse>();
  const served: string[] = [];
  const answer = (path: string, res: ServerResponse) => {
    served.push(path);
    res.writeHead(200, { 'content-type': 'audio/mpeg' }).end(mediaBytes('audio', path));
  };
  host = await startMediaHost('127.0.0.1', (req, res) => {
    const path = req.url ?? '/';
    if (path.startsWith('/hold/')) held.set(path, res);
    else answer(path, res);
  });
  const url = host.url;
  return {
    url: (path: string) => `${url}${path}`,
    served,
    /** Resolves once a request for `path` is being held. */
    async heldFor(path: string) {
      await waitFor(`a request for ${path} held`, () => held.has(path), { intervalMs: 10 });
    },
    release(path: string) {
      const res = held.get(path);
      held.delete(path);
      if (res) answer(path, res);
    },
  };
}

/** A run planned with its searches taken out of the queue: answers are applied by hand. */
async function plannedRun(harness: Harness, name: string) {
  const file = harness.writePipeline(name, audioPipeline(`it-${name}`, 2));
  const { runId } = await startRun(harness.runtime, file, { logger: harness.logger });
  const [task] = [...harness.runtime.store.tasks.unfinished(runId)];
  await harness.runtime.searchQueue.obliterate({ force: true });
  let answers = 0;
  /** Stores an answer whose result at position 0 is `resultUrl`, its audio at `audioUrl`. */
  const answer = (resultUrl: string, audioUrl: string) => {
    answers += 1;
    harness.runtime.store.applyEvents([
      {
        type: 'results',
        runId,
        taskKey: task!.key,
        callId: `0190f000-0000-7000-8000-00000000000${answers}`,
        fetchedAt: Date.now(),
        items: [{ source: 'web', position: 0, item: { url: resultUrl, audio: audioUrl } }],
      },
    ]);
  };
  const row = (): MediaRow => harness.runtime.store.media.ofRun(runId)[0]!;
  return { runId, answer, row };
}

describe('media rows under change', () => {
  it('rows of a task refused together share one re-issue, and each counts it against its limit', async () => {
    // Every media URL is refused (403 SignatureDoesNotMatch); the re-issue call takes 300 ms,
    // long after the task's other rows were refused too and asked for fresh URLs.
    h = await startHarness({
      sandbox: { mediaFaults: { tamper: 1 }, latency: { minMs: 300, maxMs: 300 } },
      env: { HARVEST_MEDIA_MAX_REISSUES: '1' },
    });
    await h.startPool({ roles: ['search', 'store', 'media'] });
    const file = h.writePipeline('shared', audioPipeline('it-media-shared', 5, ['audio', 'video']));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitForRun(h.runtime, runId, { pollMs: 50, waitForMedia: true });

    const rows = h.runtime.store.media.ofRun(runId);
    expect(rows.length).toBeGreaterThan(1);
    for (const row of rows) {
      expect(row).toMatchObject({ status: 'failed', errorCode: 'SignatureDoesNotMatch' });
      expect(row.reissues).toBe(1);
    }
    // One call got every row its one fresh URL; each row was fetched twice (first URL, fresh).
    expect(h.runtime.store.mediaCounts(runId).reissueCalls).toBe(1);
    expect(h.sandbox.ledger().media.requests).toBe(2 * rows.length);
  });

  it('tries a URL past its deadline but not yet expired when no fresh one can be had', async () => {
    const media = await heldHost();
    h = await startHarness(HELD_HOST_ALLOWED);
    // No API key: no search can be called again for a fresh URL.
    await h.startPool({ roles: ['store', 'media'], settings: { apiKey: undefined } });
    const { answer, row } = await plannedRun(h, 'late-no-key');
    // Signed an hour ago for an hour and 10 s: the safety margin (5 min) is past, the URL is not.
    const signed = new Date(Date.now() - 3600_000).toISOString().replace(/[-:]|\.\d+/g, '');
    answer(
      'https://late.example/a',
      media.url(`/late.mp3?X-Goog-Date=${signed}&X-Goog-Expires=3610&X-Goog-Signature=0`),
    );
    expect(row().deadlineAt).toBeLessThan(Date.now());
    await waitFor('the row to end', row, { until: (r) => r.status !== 'pending' });
    expect(row()).toMatchObject({ status: 'saved', reissues: 0 });
    expect(row().sha256).toBe(sha(mediaBytes('audio', media.served[0]!)));
  });

  it('a file whose row was given another result while it downloaded is not that row’s file', async () => {
    const media = await heldHost();
    h = await startHarness(HELD_HOST_ALLOWED);
    await h.startPool({ roles: ['store', 'media'] });
    const { answer, row } = await plannedRun(h, 'changed-mid-download');
    answer('https://first.example/a', media.url('/hold/first.mp3'));
    await media.heldFor('/hold/first.mp3');
    // A newer answer has another result at position 0 while the first file is on its way.
    // A fixed duration: the newer answer must be fetched later by the clock (fetchedAt).
    await sleep(5);
    answer('https://second.example/b', media.url('/second.mp3'));
    media.release('/hold/first.mp3');
    await waitFor('the row to end', row, { until: (r) => r.status !== 'pending' });
    expect(row()).toMatchObject({
      status: 'saved',
      resultUrl: 'https://second.example/b',
      sha256: sha(mediaBytes('audio', '/second.mp3')),
    });
    expect(media.served).toEqual(['/hold/first.mp3', '/second.mp3']);
  });

  it('a saved row given another result while its job still runs gets a job of its own', async () => {
    const media = await heldHost();
    h = await startHarness(HELD_HOST_ALLOWED);
    await h.startPool({ roles: ['store', 'media'] });
    const file = h.writePipeline('requeued', audioPipeline('it-requeued', 2));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const [task] = [...h.runtime.store.tasks.unfinished(runId)];
    await h.runtime.searchQueue.obliterate({ force: true });
    const apply = (n: number, items: Array<{ position: number; url: string; audio: string }>) =>
      h!.runtime.store.applyEvents([
        {
          type: 'results',
          runId,
          taskKey: task!.key,
          callId: `0190f000-0000-7000-8000-00000000001${n}`,
          fetchedAt: Date.now(),
          items: items.map(({ position, url, audio }) => ({
            source: 'web',
            position,
            item: { url, audio },
          })),
        },
      ]);
    // One job for both rows: position 0 is saved at once, position 1 is held.
    apply(1, [
      { position: 0, url: 'https://a.example/0', audio: media.url('/a0.mp3') },
      { position: 1, url: 'https://a.example/1', audio: media.url('/hold/a1.mp3') },
    ]);
    const rowAt = (position: number) =>
      h!.runtime.store.media.ofRun(runId).find((r) => r.position === position)!;
    await media.heldFor('/hold/a1.mp3');
    const saved = { until: (r: MediaRow) => r.status === 'saved' };
    await waitFor('position 0 saved', () => rowAt(0), saved);
    // A newer answer puts another result at position 0: that row is pending again, while the
    // job that saved it still waits for position 1. A fixed duration: the newer answer must be
    // fetched later by the clock (fetchedAt).
    await sleep(5);
    apply(2, [{ position: 0, url: 'https://b.example/0', audio: media.url('/b0.mp3') }]);
    expect(rowAt(0).status).toBe('pending');
    await waitFor('position 0 saved again', () => rowAt(0), saved);
    media.release('/hold/a1.mp3');
    await waitFor('position 1 saved', () => rowAt(1), saved);
    expect(rowAt(0)).toMatchObject({
      resultUrl: 'https://b.example/0',
      sha256: sha(mediaBytes('audio', '/b0.mp3')),
    });
  });
});
