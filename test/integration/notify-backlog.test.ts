/**
 * One receiver that is down must not hold back other receivers' notifications.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.ts';
import { startHarness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait.ts';

const defer = useCleanup();
const SECRET = 'test-secret-0123456789abcdef';

async function receiver(status: number) {
  let hits = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, hits: () => hits };
}

describe('webhook delivery across receivers', () => {
  it('a healthy receiver gets its notification while 100 older ones to a down receiver wait to be retried', async () => {
    // Both receivers are on loopback: allowed by the setting.
    const h = await startHarness({ env: { HARVEST_NOTIFY_ALLOW_HOSTS: '127.0.0.1' } });
    defer(() => h.stop());
    const down = await receiver(503);
    const up = await receiver(204);
    const store = h.runtime.store;
    const pipelineId = store.pipelines.upsert({ name: 'hol', hash: 'h1', yamlText: 'name: hol' });
    const make = (id: string, url: string) => {
      store.runs.create({ id, pipelineId, trigger: 'schedule', taskCount: 0 });
      store.notifications.ensure(id, url);
      store.runs.setStatus(id, 'completed');
    };
    for (let i = 0; i < 100; i++) make(`20261126T000000-d${String(i).padStart(3, '0')}`, down.url);
    await sleep(5); // fixed: the healthy run's notification is created later by the clock
    const healthy = '20261126T000001-up01';
    make(healthy, up.url);

    await h.startPool({
      roles: ['runs'],
      settings: { notifySecret: SECRET, notifyAttempts: 10 },
      runs: { pollMs: 100, notifyBackoffMs: 60_000, concurrency: 8 },
    });
    await waitFor(
      "the healthy receiver's delivery recorded",
      () => store.notifications.get(healthy),
      {
        until: (n) => n?.state === 'delivered',
        timeoutMs: 15_000,
        intervalMs: 100,
      },
    );
    const downAttempts = down.hits();
    expect(downAttempts).toBe(100); // every one of the down receiver's notifications was tried once
    expect(store.notifications.get(healthy)?.state).toBe('delivered');
    expect(up.hits()).toBe(1);
  }, 60_000);
});
