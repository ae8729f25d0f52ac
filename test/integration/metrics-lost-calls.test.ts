/**
 * Calls lost with a dead worker, reaped by two live pools at once. SQLite holds each
 * once; summed over workers (as the README says to), harvest_api_calls_total should too.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startPool } from '../../jobs/pool.ts';
import { createWorkerMetrics, type WorkerMetrics } from '../../src/metrics/registry.ts';
import { createRedis } from '../../src/queue/connection.ts';
import { InflightJournal } from '../../src/queue/inflight.ts';
import { harvestKeys } from '../../src/queue/names.ts';
import { startRun } from '../../src/run/start.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { startHarness } from '../helpers/harness.ts';
import { parsePrometheusText } from '../helpers/prometheus.ts';
import { waitFor } from '../helpers/wait.ts';

const defer = useCleanup();

async function lostCounted(m: WorkerMetrics): Promise<number> {
  const fam = parsePrometheusText(await m.text()).get('harvest_api_calls_total');
  return (fam?.samples ?? [])
    .filter((s) => s.labels.outcome === 'LOST')
    .reduce((a, s) => a + s.value, 0);
}

describe('metrics of lost calls', () => {
  it('two pools reaping the same dead worker count each lost call once between them', async () => {
    const h = await startHarness();
    defer(() => h.stop());
    const keys = harvestKeys(h.settings.queuePrefix);
    const redis = createRedis(h.settings.redisUrl, 'client');
    defer(() => redis.quit());
    const file = h.writePipeline(
      'lostcalls',
      `name: lostcalls\nsearches:\n  - query: "lost {n}"\n    limit: 1\n    matrix:\n      n: [${Array.from({ length: 60 }, (_, i) => i).join(', ')}]\n`,
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const tasks = [...h.runtime.store.tasks.unfinished(runId)];
    expect(tasks.length).toBe(60);

    const metrics: WorkerMetrics[] = [];
    for (let i = 0; i < 2; i++) {
      const m = createWorkerMetrics({
        redis,
        prefix: h.settings.queuePrefix,
        keys,
        logger: h.logger,
      });
      defer(() => m.close());
      metrics.push(m);
      const pool = await startPool({
        redisUrl: h.settings.redisUrl,
        prefix: h.settings.queuePrefix,
        roles: ['store'],
        store: h.runtime.store,
        metrics: m,
        logger: h.logger,
        reapIntervalMs: 7,
      });
      defer(() => pool.close());
    }
    // A worker that died mid-call: its journal entries, no heartbeat.
    const journal = new InflightJournal(redis, keys);
    for (let round = 0; round < 6; round++) {
      await Promise.all(
        tasks.slice(round * 10, round * 10 + 10).map((t) =>
          journal.begin({
            callId: randomUUID(),
            runId,
            taskKey: t.key,
            attempt: 1,
            startedAt: Date.now(),
            workerId: 'dead-host-1-deadbeef',
          }),
        ),
      );
      await waitFor(`the lost calls of round ${round} reaped`, () => journal.pending(), {
        until: (n) => n === 0,
      });
    }
    const lostInSqlite = () => h.runtime.store.calls.summary(runId).byOutcome.LOST ?? 0;
    const inSqlite = await waitFor('60 LOST calls in SQLite', lostInSqlite, {
      until: (n) => n === 60,
      timeoutMs: 5000,
      intervalMs: 50,
    });
    // The last reap's count may trail its record by a moment; then a while for any extra count.
    const counted = async () => (await lostCounted(metrics[0]!)) + (await lostCounted(metrics[1]!));
    await waitFor('60 lost calls counted', counted, { until: (n) => n >= 60, intervalMs: 50 });
    // A fixed duration: no extra count comes over a while.
    await sleep(300);
    expect({ inSqlite, counted: await counted() }).toEqual({ inSqlite: 60, counted: 60 });
  }, 60_000);
});
