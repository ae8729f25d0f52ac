/**
 * The metrics endpoint while Redis is away (a redis-server of this test's own, killed).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startWorkerMetrics } from '../../src/metrics/index.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { startHarness } from '../helpers/harness.ts';
import { OwnRedis } from '../helpers/own-redis.ts';
import { parsePrometheusText } from '../helpers/prometheus.ts';
import { waitFor } from '../helpers/wait.ts';

const defer = useCleanup();

async function timedScrape(url: string, ms: number) {
  const started = Date.now();
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(ms) });
    return { status: res.status, text: await res.text(), ms: Date.now() - started };
  } catch (e) {
    return { status: 0, text: String(e), ms: Date.now() - started };
  }
}

describe('metrics while Redis is down', () => {
  it('answer promptly with what this process knows, and again once Redis is back', async () => {
    const h = await startHarness();
    defer(() => h.stop());
    const redis = await OwnRedis.start();
    defer(() => redis.kill());
    const metrics = await startWorkerMetrics(
      { ...h.settings, redisUrl: redis.url() },
      { host: '127.0.0.1', port: 0, store: h.runtime.store, logger: h.logger },
    );
    defer(() => metrics.close());
    const up = await timedScrape(metrics.url, 10_000);
    expect(up.status).toBe(200);

    await redis.kill();
    // A fixed duration: the scrapes come once Redis has been gone a moment (its client retrying).
    await sleep(300);
    const down = await timedScrape(metrics.url, 10_000);
    const down2 = await timedScrape(metrics.url, 10_000);
    await redis.start();
    // The client reconnects after its backoff: the queues are in the scrape again.
    const queuesShown = (scrape: { text: string }) =>
      (parsePrometheusText(scrape.text).get('harvest_queue_jobs')?.samples.length ?? 0) > 0;
    const back = await waitFor(
      'a scrape with the queues once Redis is back',
      () => timedScrape(metrics.url, 10_000),
      { until: queuesShown, intervalMs: 200 },
    );
    const summary = {
      down: { status: down.status, fast: down.ms < 5000 },
      down2: { status: down2.status, fast: down2.ms < 5000 },
      back: back.status,
    };
    expect(summary).toEqual({
      down: { status: 200, fast: true },
      down2: { status: 200, fast: true },
      back: 200,
    });
    const fams = parsePrometheusText(down.text);
    expect(fams.has('harvest_api_calls_total') || fams.has('harvest_api_credits_used_total')).toBe(
      true,
    );
    expect(fams.get('harvest_media_files')?.samples.length).toBe(4);
    expect(
      parsePrometheusText(back.text).get('harvest_queue_jobs')?.samples.length,
    ).toBeGreaterThan(0);
  }, 60_000);
});
