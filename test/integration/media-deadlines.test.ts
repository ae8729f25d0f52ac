/**
 * Media has its own queue: a 429 storm that holds the search queue back does not hold media
 * downloads back, and they still finish before their URLs' deadlines.
 */
import { afterEach, expect, it } from 'vitest';
import { apiKeyId, holdOfModel } from '../../src/queue/rate/hold.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const rateLimited = (harness: Harness) => harness.sandbox.ledger().teams.sandbox?.calls['429'] ?? 0;

/** How much longer the rate limit of the harness's API key holds its calls, in ms (0: not held). */
async function keyHeldMs(harness: Harness): Promise<number> {
  const { rate } = harness.runtime.keys.rateOf(apiKeyId(harness.settings.apiKey));
  const hold = holdOfModel('', await harness.runtime.redis.hgetall(rate), Date.now());
  return hold ? hold.untilMs - Date.now() : 0;
}

it('downloads media before its deadlines while the search queue is held by a 429 storm', async () => {
  // Audio and video live 8 s (deadline 7.2 s after signing), screenshots 173 s.
  h = await startHarness({ sandbox: { timeScale: 0.002 } });
  await h.startPool({ roles: ['search', 'store'], concurrency: 4 });
  const media = h.writePipeline(
    'media',
    `name: it-media-storm\nsearches:\n  - matrix:\n      n: [0, 1, 2, 3, 4, 5]\n    query: "storm media {n}"\n    limit: 3\n    scrapeOptions:\n      formats: [screenshot, audio, video]\nmedia:\n  screenshot: true\n  audio: true\n  video: true\n`,
  );
  const { runId } = await startRun(h.runtime, media, { logger: h.logger });
  await waitForRun(h.runtime, runId, { pollMs: 50 });
  const requested = h.runtime.store.mediaSummary(runId)!;
  expect(requested.pending).toBeGreaterThan(0);

  // The storm: two searches a minute, and a backlog of searches that keeps hitting the limit.
  h.sandbox.control.setRateLimit({ perMinute: 2 });
  const backlog = h.writePipeline(
    'backlog',
    `name: it-backlog\nsearches:\n  - matrix:\n      n: [${Array.from({ length: 40 }, (_, i) => i).join(', ')}]\n    query: "backlog {n}"\n`,
  );
  const storm = await startRun(h.runtime, backlog, { logger: h.logger });
  await waitFor('a search refused by the rate limit (429)', () => rateLimited(h!) > 0, {
    intervalMs: 50,
  });
  const heldBefore = await keyHeldMs(h);

  await h.startPool({ roles: ['media'] });
  let heldDuring = 0;
  // How long the search queue is held is sampled while media is pending.
  const pendingMedia = async () => {
    const pending = h!.runtime.store.mediaSummary(runId)?.pending ?? 1;
    if (pending > 0) {
      heldDuring = Math.max(heldDuring, await keyHeldMs(h!));
    }
    return pending;
  };
  await waitFor('every media item of the run to end', pendingMedia, {
    until: (n) => n === 0,
    timeoutMs: 30_000,
    intervalMs: 50,
  });

  // The key's searches were held back the whole time, and its backlog is still there.
  expect(Math.max(heldBefore, heldDuring)).toBeGreaterThan(0);
  expect(h.runtime.store.tasks.counts(storm.runId).done).toBeLessThan(40);
  const rows = h.runtime.store.media.ofRun(runId);
  expect(rows).toHaveLength(requested.requested);
  for (const row of rows) {
    expect(row.status, `${row.kind}: ${row.errorMessage}`).toBe('saved');
    expect(row.reissues).toBe(0);
    expect(row.savedAt!).toBeLessThanOrEqual(row.deadlineAt);
  }
  expect(h.runtime.store.mediaCounts(runId).reissueCalls).toBe(0);
}, 60_000);

it('in one process, searches wait while urgent media waits: a saturated search queue does not starve downloads', async () => {
  // Audio and video live 3 s (deadline 2.7 s after signing), behind a backlog of searches.
  h = await startHarness({ sandbox: { timeScale: 3 / 3600, latency: { minMs: 10, maxMs: 30 } } });
  await h.startPool({ roles: ['search', 'store', 'media'], concurrency: 32 });
  const media = h.writePipeline(
    'media',
    `name: it-media-gate\nsearches:\n  - matrix:\n      n: [0, 1, 2, 3]\n    query: "gate media {n}"\n    limit: 10\n    scrapeOptions:\n      formats: [screenshot, audio, video]\nmedia:\n  screenshot: true\n  audio: true\n  video: true\n`,
  );
  const backlog = h.writePipeline(
    'backlog',
    `name: it-gate-backlog\nsearches:\n  - matrix:\n      n: [${Array.from({ length: 800 }, (_, i) => i).join(', ')}]\n    query: "gate backlog {n}"\n`,
  );
  const { runId } = await startRun(h.runtime, media, { logger: h.logger });
  const storm = await startRun(h.runtime, backlog, { logger: h.logger });
  await waitForRun(h.runtime, runId, { pollMs: 50, waitForMedia: true });

  const rows = h.runtime.store.media.ofRun(runId);
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) {
    expect(row.status, `${row.kind}: ${row.errorMessage}`).toBe('saved');
    expect(row.reissues).toBe(0);
  }
  expect(h.logs()).toContain('searches wait for urgent media');
  // The backlog goes on once the media is saved.
  const doneAtMediaEnd = h.runtime.store.tasks.counts(storm.runId).done;
  expect(doneAtMediaEnd).toBeLessThan(800);
  await waitFor(
    `the backlog to go on past ${doneAtMediaEnd} tasks done`,
    () => h!.runtime.store.tasks.counts(storm.runId).done,
    { until: (done) => done > doneAtMediaEnd, intervalMs: 50 },
  );
}, 60_000);
