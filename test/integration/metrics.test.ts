/**
 * Worker metrics on real parts: prom-client's text scraped over HTTP, read by a strict parser,
 * before and after a run on the sandbox.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startWorkerMetrics } from '../../src/metrics/index.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import type { StoreEvent } from '../../src/store/index.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { spawnCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { type Family, parsePrometheusText, sampleValue } from '../helpers/prometheus.ts';

const defer = useCleanup();

async function harness(): Promise<Harness> {
  const h = await startHarness();
  defer(() => h.stop());
  return h;
}

async function scrape(url: string): Promise<Map<string, Family>> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
  return parsePrometheusText(await res.text());
}

const PIPELINE = `name: metered
run:
  rateLimitPerMinute: 600
searches:
  - query: "metrics {n}"
    limit: 3
    matrix:
      n: [1, 2, 3]
`;

describe('worker metrics', () => {
  it('parse as Prometheus text on loopback and move when a run runs', async () => {
    const h = await harness();
    const metrics = await startWorkerMetrics(h.settings, {
      host: '127.0.0.1',
      port: 0,
      store: h.runtime.store,
      logger: h.logger,
    });
    defer(() => metrics.close());
    expect(metrics.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

    const before = await scrape(metrics.url);
    expect(sampleValue(before, 'harvest_api_calls_total')).toBeUndefined();
    expect(sampleValue(before, 'harvest_api_credits_used_total')).toBe(0);
    expect(sampleValue(before, 'harvest_api_rate_limited_total')).toBe(0);
    expect(sampleValue(before, 'harvest_rate_allowed_per_second')).toBe(Number.POSITIVE_INFINITY);
    expect(sampleValue(before, 'harvest_queue_jobs', { queue: 'search', state: 'waiting' })).toBe(
      0,
    );
    expect(sampleValue(before, 'harvest_queue_jobs', { queue: 'runs', state: 'delayed' })).toBe(0);
    expect(sampleValue(before, 'harvest_media_files', { status: 'saved' })).toBe(0);
    expect(sampleValue(before, 'harvest_media_files', { status: 'expired' })).toBe(0);
    expect(sampleValue(before, 'harvest_schedule_ticks_total', { outcome: 'started' })).toBe(0);
    expect(before.get('harvest_process_cpu_seconds_total')?.type).toBe('counter');

    // Enqueued with no worker yet: the jobs wait.
    const file = h.writePipeline('metered', PIPELINE);
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const queued = await scrape(metrics.url);
    expect(sampleValue(queued, 'harvest_queue_jobs', { queue: 'search', state: 'waiting' })).toBe(
      3,
    );
    // The run's own limit paces that run alone: the API key's rate, learned from 429s, is not it.
    expect(sampleValue(queued, 'harvest_rate_allowed_per_second')).toBe(Number.POSITIVE_INFINITY);

    await h.startPool({ metrics: metrics.pool });
    expect((await waitForRun(h.runtime, runId, { pollMs: 50 })).status).toBe('completed');
    const after = await scrape(metrics.url);
    const calls = h.runtime.store.calls.summary(runId);
    expect(sampleValue(after, 'harvest_api_calls_total')).toBe(calls.calls);
    expect(sampleValue(after, 'harvest_api_calls_total', { status: '200', outcome: 'ok' })).toBe(3);
    expect(sampleValue(after, 'harvest_api_credits_used_total')).toBe(calls.creditsUsed);
    expect(calls.creditsUsed).toBeGreaterThan(0);
    expect(sampleValue(after, 'harvest_queue_jobs', { queue: 'search', state: 'waiting' })).toBe(0);

    expect((await fetch(metrics.url.replace('/metrics', '/'))).status).toBe(404);
  });

  it('count 429s and calls without an answer from the events the pool records', async () => {
    const h = await harness();
    const metrics = await startWorkerMetrics(h.settings, {
      host: '127.0.0.1',
      port: 0,
      logger: h.logger,
    });
    defer(() => metrics.close());
    const call = (status: number | null, outcome: string, creditsUsed: number | null) =>
      ({
        type: 'call',
        callId: randomUUID(),
        runId: 'r',
        taskKey: 't',
        attempt: 1,
        startedAt: Date.now(),
        durationMs: 5,
        status,
        outcome,
        creditsUsed,
      }) as StoreEvent;
    metrics.pool.recorded([
      call(429, 'RATE_LIMITED', null),
      call(429, 'RATE_LIMITED', null),
      call(200, 'ok', 4),
      call(null, 'NETWORK', null),
      { type: 'task', runId: 'r', taskKey: 't', status: 'done', attempts: 1, at: Date.now() },
    ]);
    metrics.pool.tick('skipped');
    metrics.pool.notification('pending');
    const m = await scrape(metrics.url);
    expect(sampleValue(m, 'harvest_api_rate_limited_total')).toBe(2);
    expect(
      sampleValue(m, 'harvest_api_calls_total', { status: '429', outcome: 'RATE_LIMITED' }),
    ).toBe(2);
    expect(sampleValue(m, 'harvest_api_calls_total', { status: 'none', outcome: 'NETWORK' })).toBe(
      1,
    );
    expect(sampleValue(m, 'harvest_api_credits_used_total')).toBe(4);
    expect(sampleValue(m, 'harvest_schedule_ticks_total', { outcome: 'skipped' })).toBe(1);
    expect(sampleValue(m, 'harvest_notifications_total', { state: 'pending' })).toBe(1);
    // Without the database, no media figures (they would be zeros that mean nothing).
    expect(m.has('harvest_media_files')).toBe(false);
  });

  it('harvest worker --metrics-port serves them; a port in use exits 3', async () => {
    const h = await harness();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    defer(() => new Promise((resolve) => taken.close(resolve)));
    const busyPort = (taken.address() as AddressInfo).port;
    const refused = spawnCli(['worker', '--metrics-port', String(busyPort)], h.settings);
    expect(await refused.exited).toBe(3);
    expect(refused.stderr()).toContain(`port 127.0.0.1:${busyPort} is in use`);

    const worker = spawnCli(['worker', '--metrics-port', '0'], h.settings, { LOG_LEVEL: 'info' });
    defer(async () => {
      worker.child.kill('SIGTERM');
      await worker.exited;
    });
    // Its log says where the metrics are, then that the pool has started.
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(worker.stderr())), 20_000);
      worker.child.stderr?.on('data', () => {
        const m = /"url":"(http:[^"]+)"/.exec(worker.stderr());
        if (m?.[1] && worker.stderr().includes('"msg":"worker started"')) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const m = await scrape(url);
    expect(sampleValue(m, 'harvest_queue_jobs', { queue: 'runs', state: 'waiting' })).toBe(0);
    expect(m.has('harvest_media_files')).toBe(true);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });
});
