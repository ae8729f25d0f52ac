/**
 * Two scrapes at once (an HA pair of Prometheus servers, or a scrape and a curl) must each
 * get every queue's job counts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startWorkerMetrics } from '../../src/metrics/index.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { startHarness } from '../helpers/harness.ts';
import { parsePrometheusText } from '../helpers/prometheus.ts';

const defer = useCleanup();

describe('metrics under concurrent scrapes', () => {
  it('every concurrent scrape carries harvest_queue_jobs for every queue', async () => {
    const h = await startHarness();
    defer(() => h.stop());
    const metrics = await startWorkerMetrics(h.settings, {
      host: '127.0.0.1',
      port: 0,
      store: h.runtime.store,
      logger: h.logger,
    });
    defer(() => metrics.close());
    const queueCount = Object.values(QUEUES).length;
    const problems: string[] = [];
    for (let round = 0; round < 60; round++) {
      const texts = await Promise.all(
        // Fixed offsets: the scrapes are spread over a few ms to overlap in different ways.
        Array.from({ length: 4 }, (_, k) =>
          sleep(k * (round % 5)).then(() => fetch(metrics.url).then((r) => r.text())),
        ),
      );
      for (const [i, text] of texts.entries()) {
        const fam = parsePrometheusText(text).get('harvest_queue_jobs');
        const queues = new Set(fam?.samples.map((s) => s.labels.queue));
        const paused = parsePrometheusText(text).get('harvest_queue_paused');
        if (queues.size !== queueCount || (paused?.samples.length ?? 0) !== queueCount)
          problems.push(
            `round ${round} scrape ${i}: jobs for ${queues.size}/${queueCount} queues, paused for ${paused?.samples.length ?? 0}`,
          );
      }
    }
    expect(problems).toEqual([]);
  });
});
