/**
 * `harvest dashboard` on real Redis under a fresh prefix: the page and Bull Board's API on
 * loopback, actions refused when read-only and done with --allow-actions, basic auth off
 * loopback, and the command's one-line refusals (no credentials, port in use).
 */
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { type RunningDashboard, startDashboard } from '../../src/dashboard/server.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { openRunsQueue } from '../../src/schedule/schedulers.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { searchQueueWithJobs } from '../helpers/queues.ts';
import { REDIS_URL, testRedis } from '../helpers/redis.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const defer = useCleanup();

const queuesWithJobs = () => searchQueueWithJobs(defer);

async function dashboard(
  prefix: string,
  options: Partial<Parameters<typeof startDashboard>[0]> = {},
): Promise<RunningDashboard> {
  const running = await startDashboard({ redisUrl: REDIS_URL, prefix, port: 0, ...options });
  defer(() => running.close());
  return running;
}

const put = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'PUT', headers });

describe('harvest dashboard', () => {
  it("serves Bull Board's page and every harvest queue under the prefix, on loopback", async () => {
    const { prefix } = await queuesWithJobs();
    const board = await dashboard(prefix);
    expect(board.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(board.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).toContain('<title>harvest (read-only)</title>');
    const script = /<script[^>]+src="([^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const bundle = await fetch(new URL(script!, board.url));
    expect(bundle.status).toBe(200);
    expect((await bundle.text()).length).toBeGreaterThan(1000);

    const api = (await (await fetch(`${board.url}api/queues`)).json()) as {
      queues: { name: string; readOnlyMode: boolean; counts: Record<string, number> }[];
    };
    expect(api.queues.map((q) => q.name).sort()).toEqual(Object.values(QUEUES).sort());
    const search = api.queues.find((q) => q.name === QUEUES.search)!;
    expect(search.readOnlyMode).toBe(true);
    expect(search.counts).toMatchObject({ failed: 1, waiting: 1 });
  });

  it('refuses every action when read-only, and nothing changes', async () => {
    const { prefix, search } = await queuesWithJobs();
    const board = await dashboard(prefix);
    const q = `${board.url}api/queues/${QUEUES.search}`;
    const attempts = [
      put(`${q}/retry/failed`),
      put(`${q}/clean/failed`),
      put(`${q}/run1.fails/retry`),
      put(`${q}/run1.waits/clean`),
      put(`${q}/pause`),
      put(`${board.url}api/queues/pause`),
      put(`${q}/empty`),
      fetch(`${q}/add`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'x', data: {} }),
      }),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(405);
      expect(((await response.json()) as { error: string }).error).toContain('--allow-actions');
    }
    expect(await search.getJobCounts('failed', 'waiting')).toEqual({ failed: 1, waiting: 1 });
    expect(await search.isPaused()).toBe(false);
  });

  it('retries, pauses and cleans with --allow-actions', async () => {
    const { prefix, search } = await queuesWithJobs();
    const board = await dashboard(prefix, { allowActions: true });
    const q = `${board.url}api/queues/${QUEUES.search}`;
    const listed = (await (await fetch(`${board.url}api/queues`)).json()) as {
      queues: { readOnlyMode: boolean }[];
    };
    expect(listed.queues.every((queue) => !queue.readOnlyMode)).toBe(true);
    expect((await put(`${q}/retry/failed`)).status).toBe(200);
    expect(await search.getJobCounts('failed', 'waiting')).toEqual({ failed: 0, waiting: 2 });
    expect((await put(`${q}/pause`)).status).toBe(200);
    expect(await search.isPaused()).toBe(true);
    expect((await put(`${q}/run1.waits/clean`)).status).toBe(204);
    expect(await search.getJob('run1.waits')).toBeUndefined();
  });

  it("edits a schedule with harvest's repeat strategy: a Lord Howe cron the day before its clocks go back", async () => {
    const { prefix, redis } = testRedis(defer);
    // Only Date is moved (to 3 April 2026, 16:00 UTC): cron-parser throws for a daily cron on
    // the hour that day, and BullMQ's own strategy refuses the edit.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.UTC(2026, 3, 3, 16) });
    defer(() => vi.useRealTimers());
    const repeat = { pattern: '0 2 * * *', tz: 'Australia/Lord_Howe' };
    const queue = openRunsQueue(redis, prefix);
    defer(() => queue.close());
    await queue.upsertJobScheduler('daily', repeat, { name: 'tick', data: {} });
    const board = await dashboard(prefix, { allowActions: true });
    const edit = await fetch(`${board.url}api/queues/${QUEUES.runs}/job-schedulers/daily`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...repeat, pattern: '0 3 * * *' }),
    });
    expect(edit.status).toBe(204);
    expect((await queue.getJobScheduler('daily'))?.pattern).toBe('0 3 * * *');
  });

  it('open on loopback, answers this host only: a rebound name or another site gets 403', async () => {
    const { prefix, search } = await queuesWithJobs();
    const board = await dashboard(prefix, { allowActions: true });
    const port = Number(new URL(board.url).port);
    const send = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            method: 'PUT',
            path: `/api/queues/${QUEUES.search}/pause`,
            headers,
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    // A page whose name was made to resolve to 127.0.0.1 (DNS rebinding): same-origin to the
    // browser, its own name in Host.
    const rebound = `rebind.evil.example:${port}`;
    expect(await send({ host: rebound, origin: `http://${rebound}` })).toBe(403);
    // Another site's page, straight at 127.0.0.1.
    expect(await send({ host: `127.0.0.1:${port}`, origin: 'https://evil.example' })).toBe(403);
    expect(await search.isPaused()).toBe(false);
    expect(await send({ host: `localhost:${port}`, origin: `http://localhost:${port}` })).toBe(200);
    expect(await search.isPaused()).toBe(true);
  });

  it('asks for basic auth when credentials are set, and checks them', async () => {
    const { prefix } = testRedis(defer);
    const board = await dashboard(prefix, {
      host: '0.0.0.0',
      auth: { user: 'ops', password: 'correct horse' },
    });
    const url = board.url.replace('0.0.0.0', '127.0.0.1');
    const basic = (text: string) => ({
      authorization: `Basic ${Buffer.from(text).toString('base64')}`,
    });
    const none = await fetch(url);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm="harvest dashboard"/);
    expect((await fetch(url, { headers: basic('ops:wrong') })).status).toBe(401);
    expect((await fetch(`${url}api/queues`, { headers: basic('ops:wrong') })).status).toBe(401);
    // auth comes first: an action without credentials learns nothing about the mode
    expect((await put(`${url}api/queues/search/pause`)).status).toBe(401);
    expect((await fetch(url, { headers: basic('ops:correct horse') })).status).toBe(200);
    expect((await put(`${url}api/queues/search/pause`, basic('ops:correct horse'))).status).toBe(
      405,
    );
  });
});

describe('harvest dashboard, the command', () => {
  const run = promisify(execFile);
  async function harvest(args: string[], env: Record<string, string> = {}) {
    try {
      const out = await run('node', ['bin/harvest.js', 'dashboard', ...args], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', REDIS_URL, ...env },
        // only a dashboard that wrongly started runs this long; a loaded machine needs slack
        timeout: 45_000,
      });
      return { code: 0, ...out };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  it('refuses a non-loopback address without credentials, and a port in use, in one line', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    defer(() => new Promise((resolve) => busy.close(resolve)));
    const busyPort = (busy.address() as { port: number }).port;
    const [open, taken, half] = await Promise.all([
      harvest(['--host', '0.0.0.0', '--port', '0']),
      harvest(['--port', String(busyPort)]),
      harvest(['--host', '0.0.0.0'], { HARVEST_DASHBOARD_USER: 'ops' }),
    ]);
    expect(open.code).toBe(2);
    expect(open.stderr).toBe(
      'harvest: refusing to serve the dashboard on 0.0.0.0 without a password: set HARVEST_DASHBOARD_USER and HARVEST_DASHBOARD_PASSWORD, or keep the default --host 127.0.0.1\n',
    );
    expect(taken.code).toBe(3);
    expect(taken.stderr).toBe(`harvest: 127.0.0.1:${busyPort} is in use: pick another --port\n`);
    expect(half.code).toBe(2);
    expect(half.stderr).toContain(
      'HARVEST_DASHBOARD_USER and HARVEST_DASHBOARD_PASSWORD go together',
    );
  }, 90_000);
});
