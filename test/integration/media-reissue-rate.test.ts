/**
 * One rate limit shared by all workers, media re-issues included: once the pool has learned the
 * service's fixed window, re-issues (jobs/media/reissue.ts) take their turns of it like every
 * search, so neither they nor the searches meet another 429. Real Redis, the sandbox on port 0
 * with a limit and scaled media lifetimes, a temp SQLite file.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function pipeline(name: string, n: number, media: boolean): string {
  return `name: ${name}
searches:
  - matrix:
      n: [${Array.from({ length: n }, (_, i) => i).join(', ')}]
    query: "${name} {n}"
    limit: 2
${media ? '    scrapeOptions:\n      formats: [audio]\nmedia:\n  audio: true\n' : ''}`;
}

describe('media re-issues and the shared rate limit', () => {
  it('no 429 once the limit is learned, re-issues included', async () => {
    // 4 requests per 2 s window (fixed); audio URLs live 1.8 s.
    h = await startHarness({
      sandbox: { timeScale: 0.0005, rateLimitPerMinute: 4, rateLimitWindowMs: 2000 },
    });
    const searchPool = await h.startPool({ roles: ['search', 'store'], concurrency: 8 });
    // Phase 1: media searches, 8 at once against 4 a window: the pool meets the limit and
    // learns it (with 4 at once, two waves could fall on either side of a window boundary).
    const a = await startRun(h.runtime, h.writePipeline('a', pipeline('reissue-media', 8, true)), {
      logger: h.logger,
    });
    await waitForRun(h.runtime, a.runId, { pollMs: 50 });
    const learned429 = h.sandbox.ledger().teams.sandbox?.calls['429'] ?? 0;
    expect(learned429).toBeGreaterThan(0);
    // A fixed duration: every audio URL has expired (they live 1.8 s), so saving one needs a
    // re-issue.
    await sleep(2500);

    // Phase 2: the media role re-issues while the pool runs plain searches.
    await h.startPool({ roles: ['store', 'media'] });
    const b = await startRun(
      h.runtime,
      h.writePipeline('b', pipeline('reissue-plain', 16, false)),
      {
        logger: h.logger,
      },
    );
    await waitForRun(h.runtime, b.runId, { pollMs: 50 });
    await waitFor(
      'every media item of the first run to end',
      () => h!.runtime.store.mediaSummary(a.runId),
      {
        until: (summary) => summary?.pending === 0,
        timeoutMs: 40_000,
        intervalMs: 50,
      },
    );
    await searchPool.close();
    const reissues = h.runtime.store.mediaCounts(a.runId).reissueCalls;
    const team = h.sandbox.ledger().teams.sandbox!;
    expect(reissues).toBeGreaterThan(0);
    expect((team.calls['429'] ?? 0) - learned429).toBe(0);
  }, 90_000);
});
