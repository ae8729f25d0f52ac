/**
 * Webhook deliveries against receivers that misbehave (hang, redirect, answer a huge
 * error page), through sendNotification on a real database.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createWebhookAgent } from '../../jobs/runs/webhook-agent.ts';
import { sendNotification } from '../../src/notify/send.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { startHarness } from '../helpers/harness.ts';

const defer = useCleanup();
const SECRET = 'test-secret-0123456789abcdef';

async function receiver(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, hits: () => hits };
}

async function finishedRun(url: string) {
  // The receivers are on loopback: allowed by the setting, as a worker's would be.
  const h = await startHarness({ env: { HARVEST_NOTIFY_ALLOW_HOSTS: '127.0.0.1' } });
  defer(() => h.stop());
  const dispatcher = createWebhookAgent(h.settings);
  defer(() => dispatcher.close());
  const store = h.runtime.store;
  const pipelineId = store.pipelines.upsert({ name: 'recv', hash: 'h1', yamlText: 'name: recv' });
  const runId = '20261126T000000-rcv1';
  store.runs.create({ id: runId, pipelineId, trigger: 'schedule', taskCount: 0 });
  store.notifications.ensure(runId, url);
  store.runs.setStatus(runId, 'completed');
  const send = (timeoutMs = 1000) =>
    sendNotification(store, runId, {
      secret: SECRET,
      final: false,
      timeoutMs,
      maxNewResults: 1000,
      logger: h.logger,
      dispatcher,
    });
  return { h, store, runId, send };
}

describe('webhook receivers that misbehave', () => {
  it('a receiver that never answers: pending after the timeout, recorded with no status', async () => {
    const hook = await receiver(() => {});
    const { send, store, runId } = await finishedRun(hook.url);
    const started = Date.now();
    const r = await send(800);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(r).toMatchObject({ state: 'pending', status: null });
    expect(store.notifications.attempts(runId)).toHaveLength(1);
  });

  it('a refused address: pending at once, no status, the error recorded', async () => {
    const closed = await receiver(() => {});
    const url = closed.url;
    const { send, store, runId, h } = await finishedRun(url.replace(/:(\d+)\//, ':1/'));
    const r = await send(2000);
    expect(r).toMatchObject({ state: 'pending', status: null });
    expect(r.error).toMatch(/ECONNREFUSED|refused/i);
    expect(store.notifications.get(runId)).toMatchObject({ state: 'pending', attempts: 1 });
    expect(h.logs()).not.toContain(SECRET);
  });

  it('a redirect is not followed and does not deliver', async () => {
    const target = await receiver((_req, res) => res.writeHead(204).end());
    const hook = await receiver((_req, res) =>
      res.writeHead(307, { location: target.url }).end('moved'),
    );
    const { send } = await finishedRun(hook.url);
    const r = await send();
    expect(r).toMatchObject({ state: 'pending', status: 307 });
    expect(target.hits()).toBe(0);
  });

  it('reads nothing of an error answer, and quotes none of it (a 200 MB error page)', async () => {
    let written = 0;
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    const hook = await receiver((req, res) => {
      req.resume();
      res.writeHead(500, { 'content-type': 'text/html' });
      const pump = () => {
        while (written < 200 * chunk.length) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const { send } = await finishedRun(hook.url);
    const heapBefore = process.memoryUsage().rss;
    const r = await send(10_000);
    const grewMb = (process.memoryUsage().rss - heapBefore) / 1e6;
    expect(r.state).toBe('pending');
    expect(r.error).toBe('the receiver answered 500');
    expect({ receivedMb: Math.round(written / 1e6), rssGrowthMb: Math.round(grewMb) }).toEqual(
      expect.objectContaining({ receivedMb: expect.any(Number) }),
    );
    expect(written).toBeLessThan(16 * chunk.length);
  }, 60_000);
});
