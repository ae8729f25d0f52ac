/**
 * Webhooks of scheduled runs: a receiver on port 0 in this process gets each run's summary,
 * checks the signature the way the README tells users to, and can fail on purpose.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { enqueueDueNotifications } from '../../src/notify/due.ts';
import type { RunNotification } from '../../src/notify/payload.ts';
import { pipelineTextHash } from '../../src/pipeline/keys.ts';
import { createRedis } from '../../src/queue/connection.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { runTick } from '../../src/schedule/tick.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { applySchedule, runsQueue, waitForTicks } from '../helpers/schedule.ts';
import { waitFor } from '../helpers/wait.ts';

const defer = useCleanup();
const SECRET = 'test-secret-0123456789abcdef';
/** The receivers are on loopback, which the address rule refuses unless the setting allows it. */
const RECEIVERS_ALLOWED = { env: { HARVEST_NOTIFY_ALLOW_HOSTS: '127.0.0.1' } };

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver answering with `statuses` in turn (then the last one, forever). */
async function receiver(statuses: number[] = [204]) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += String(chunk);
    });
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      const status = statuses[Math.min(received.length - 1, statuses.length - 1)] ?? 204;
      res.writeHead(status).end(status >= 300 ? 'receiver is down' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks/harvest`, received };
}

/** The check the README describes: HMAC-SHA256 of "<timestamp>.<raw body>", in hex. */
function validSignature(r: Received, secret: string): boolean {
  const timestamp = String(r.headers['x-harvest-timestamp']);
  const given = String(r.headers['x-harvest-signature']);
  const expected = `sha256=${createHmac('sha256', secret).update(`${timestamp}.${r.body}`).digest('hex')}`;
  const fresh = Math.abs(Date.now() / 1000 - Number(timestamp)) < 300;
  return (
    fresh &&
    given.length === expected.length &&
    timingSafeEqual(Buffer.from(given), Buffer.from(expected))
  );
}

async function setUp(
  name: string,
  url: string,
  cron: string,
  pool: { attempts?: number; secret?: string | undefined } = {},
): Promise<Harness> {
  const h = await startHarness(RECEIVERS_ALLOWED);
  defer(() => h.stop());
  const queue = runsQueue(h);
  defer(() => queue.close());
  await h.startPool({
    roles: ['search', 'store', 'runs'],
    settings: {
      notifySecret: 'secret' in pool ? pool.secret : SECRET,
      notifyAttempts: pool.attempts ?? 10,
    },
    runs: { pollMs: 100, notifyBackoffMs: 100 },
  });
  const file = h.writePipeline(
    name,
    `name: ${name}
searches:
  - query: "webhook {n}"
    limit: 4
    matrix:
      n: [a, b]
schedule:
  cron: "${cron}"
  notify: ${url}
`,
  );
  await applySchedule(queue, file);
  // Stop ticking once the runs a test needs have started.
  defer(() => queue.removeJobScheduler(name));
  return h;
}

/**
 * A scheduled run (its tick handled as the runs role does) worked to the end by a pool without
 * the runs role, which is then closed: its notification is pending, and no job delivers it.
 */
async function finishedWithoutRunsRole(name: string, url: string) {
  const h = await startHarness(RECEIVERS_ALLOWED);
  defer(() => h.stop());
  const file = h.writePipeline(
    name,
    `name: ${name}\nsearches:\n  - query: "${name}"\n    limit: 2\nschedule:\n  cron: "0 6 * * *"\n  notify: ${url}\n`,
  );
  const text = readFileSync(file, 'utf8');
  const data = { pipelineName: name, yamlText: text, pipelineHash: pipelineTextHash(text) };
  const tick = await runTick(h.runtime, data, Date.now(), { logger: h.logger });
  const runId = tick.runId as string;
  const searchers = await h.startPool({ roles: ['search', 'store'] });
  expect((await waitForRun(h.runtime, runId, { pollMs: 50 })).status).toBe('completed');
  await searchers.close();
  return { h, runId };
}

describe('webhook notifications of scheduled runs', () => {
  it('deliver each run its summary, cost and new results, signed with the secret', async () => {
    const hook = await receiver();
    const h = await setUp('notified', hook.url, '*/2 * * * * *');
    const ticks = await waitForTicks(
      h,
      'notified',
      (t) => t.filter((x) => x.outcome === 'started').length >= 2,
    );
    const runIds = ticks.filter((t) => t.outcome === 'started').map((t) => t.runId as string);
    await waitFor('two deliveries received', () => hook.received.length, { until: (n) => n >= 2 });
    const store = h.runtime.store;
    const [first, second] = hook.received.slice(0, 2).map((r) => {
      expect(validSignature(r, SECRET)).toBe(true);
      expect(validSignature(r, 'another-secret-0123456789')).toBe(false);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-harvest-event']).toBe('run.finished');
      return JSON.parse(r.body) as RunNotification;
    });
    expect([first?.run.id, second?.run.id]).toEqual(runIds.slice(0, 2));
    // The receiver has the body before the sender has its answer and records the delivery.
    for (const id of runIds.slice(0, 2)) {
      await waitFor(`the delivery of ${id} recorded`, () => store.notifications.get(id), {
        until: (n) => n?.state === 'delivered',
      });
    }
    for (const n of [first, second]) {
      const id = n?.run.id as string;
      expect(hook.received.find((r) => r.headers['x-harvest-delivery'] === id)).toBeDefined();
      const calls = store.calls.summary(id);
      expect(n).toMatchObject({
        event: 'run.finished',
        run: { pipeline: 'notified', status: 'completed', trigger: 'schedule' },
        summary: { tasks: { total: 2, done: 2, failed: 0 }, results: store.results.count(id) },
        cost: { calls: calls.calls, creditsUsed: calls.creditsUsed, maxCredits: null },
      });
      expect(store.notifications.get(id)).toMatchObject({ state: 'delivered', attempts: 1 });
    }
    // The second run found the same URLs: nothing new to the pipeline.
    const urls = new Set([...store.iterateResults(first?.run.id)].map((r) => r.url));
    expect(urls.size).toBeGreaterThan(0);
    expect(first?.summary.newResults).toBe(urls.size);
    expect(first?.newResults.map((r) => r.url).sort()).toEqual([...urls].sort());
    expect(second?.summary.newResults).toBe(0);
    expect(second?.newResults).toEqual([]);
    // Nor anything changed since the first run (the same world): every result is the same.
    expect(second?.changes).toMatchObject({
      baselineRunId: first?.run.id,
      counts: { new: 0, changed: 0, dropped: 0, same: store.results.count(second?.run.id ?? '') },
      new: [],
      dropped: [],
      truncated: false,
    });
    const report = store.runStatus(second?.run.id as string);
    expect(report?.notification?.state).toBe('delivered');
  });

  it('retry a failing receiver with backoff, record every attempt, and never fail the run', async () => {
    const hook = await receiver([500, 503, 200]);
    const h = await setUp('retried', hook.url, '*/2 * * * * *');
    const [tick] = await waitForTicks(h, 'retried', (t) => t.some((x) => x.outcome === 'started'));
    const runId = tick?.runId as string;
    const row = await waitFor(
      'the delivery recorded',
      () => h.runtime.store.notifications.get(runId),
      {
        until: (n) => n?.state === 'delivered',
      },
    );
    expect(row).toMatchObject({ attempts: 3, lastStatus: 200, lastError: null });
    const attempts = h.runtime.store.notifications.attempts(runId);
    expect(attempts.map((a) => [a.attempt, a.status])).toEqual([
      [1, 500],
      [2, 503],
      [3, 200],
    ]);
    // The status only: nothing of the receiver's error page is kept.
    expect(attempts[0]?.error).toBe('the receiver answered 500');
    // Backoff: 100 ms, then 200 ms.
    expect((attempts[2]?.at ?? 0) - (attempts[0]?.at ?? 0)).toBeGreaterThanOrEqual(300);
    const deliveries = hook.received.filter((r) => r.headers['x-harvest-delivery'] === runId);
    expect(deliveries).toHaveLength(3);
    expect(deliveries.every((r) => validSignature(r, SECRET))).toBe(true);
    expect(h.runtime.store.runs.get(runId)?.status).toBe('completed');
  });

  it('give up after the last attempt, recorded as failed; the run stays completed', async () => {
    const hook = await receiver([500]);
    const h = await setUp('refused', hook.url, '*/2 * * * * *', { attempts: 3 });
    const [tick] = await waitForTicks(h, 'refused', (t) => t.some((x) => x.outcome === 'started'));
    const runId = tick?.runId as string;
    const row = await waitFor(
      'the delivery given up',
      () => h.runtime.store.notifications.get(runId),
      {
        until: (n) => n?.state === 'failed',
      },
    );
    expect(row).toMatchObject({ attempts: 3, lastStatus: 500 });
    expect(h.runtime.store.notifications.attempts(runId)).toHaveLength(3);
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    // A fixed duration: no attempt follows the last one over a while (backoff 100-200 ms).
    await sleep(500);
    expect(hook.received.filter((r) => r.headers['x-harvest-delivery'] === runId)).toHaveLength(3);
  });

  it('send nothing unsigned: without a secret the delivery fails at once, recorded', async () => {
    const hook = await receiver();
    const h = await setUp('unsigned', hook.url, '*/2 * * * * *', { secret: undefined });
    const [tick] = await waitForTicks(h, 'unsigned', (t) => t.some((x) => x.outcome === 'started'));
    const runId = tick?.runId as string;
    const row = await waitFor(
      'the delivery failed',
      () => h.runtime.store.notifications.get(runId),
      {
        until: (n) => n?.state === 'failed',
      },
    );
    expect(row?.attempts).toBe(1);
    expect(row?.lastError).toContain('HARVEST_NOTIFY_SECRET is not set');
    expect(hook.received).toHaveLength(0);
  });

  it('deliver a notification that fell due while no worker had the runs role, once one starts', async () => {
    const hook = await receiver();
    // A tick handled as the runs role does, then that worker is gone: the run is worked and
    // finishes by a pool without the runs role, and Redis holds no notify job.
    const { h, runId } = await finishedWithoutRunsRole('orphaned', hook.url);
    // A fixed duration: nothing is delivered over a while with no worker of the runs role.
    await sleep(300);
    expect(hook.received).toHaveLength(0);
    expect(h.runtime.store.notifications.get(runId)?.state).toBe('pending');

    await h.startPool({
      roles: ['runs'],
      settings: { notifySecret: SECRET },
      runs: { pollMs: 100, notifyBackoffMs: 100 },
    });
    await waitFor('a delivery received', () => hook.received.length > 0);
    expect(hook.received[0]?.headers['x-harvest-delivery']).toBe(runId);
    expect(validSignature(hook.received[0] as Received, SECRET)).toBe(true);
    await waitFor('the delivery recorded', () => h.runtime.store.notifications.get(runId), {
      until: (n) => n?.state === 'delivered',
    });
  });

  it('deliver a notification whose job failed for good without recording why', async () => {
    const hook = await receiver();
    const { h, runId } = await finishedWithoutRunsRole('stuck', hook.url);
    // Its delivery job threw on its last attempt (a locked database, say): failed for good in
    // Redis, while SQLite still says pending.
    const queue = runsQueue(h);
    defer(() => queue.close());
    expect(
      await enqueueDueNotifications(h.runtime.store, queue, { attempts: 1, backoffMs: 1 }),
    ).toBe(1);
    const connection = createRedis(h.settings.redisUrl, 'worker');
    defer(() => connection.quit());
    const failing = new Worker(
      queue.name,
      async () => {
        throw new Error('database is locked');
      },
      { connection, prefix: h.settings.queuePrefix },
    );
    await waitFor('the failing worker running', () => failing.isRunning());
    await waitFor('the delivery job failed for good', () => queue.getJobCounts('failed'), {
      until: (counts) => (counts.failed ?? 0) > 0,
    });
    await failing.close();
    expect(h.runtime.store.notifications.get(runId)?.state).toBe('pending');

    await h.startPool({
      roles: ['runs'],
      settings: { notifySecret: SECRET },
      runs: { pollMs: 100, notifyBackoffMs: 100 },
    });
    await waitFor('the delivery recorded', () => h.runtime.store.notifications.get(runId), {
      until: (n) => n?.state === 'delivered',
    });
    expect(hook.received).toHaveLength(1);
  });
});
