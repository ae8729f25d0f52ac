/**
 * Markup in job names, data (queries), failure reasons and stack traces is shown as text
 * by the dashboard in Chromium, never run.
 */
import { Queue, Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { startDashboard } from '../../src/dashboard/server.ts';
import { createRedis } from '../../src/queue/connection.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { REDIS_URL, testRedis } from '../helpers/redis.ts';

const missing = chromiumMissing();
const defer = useCleanup();
const XSS = (tag: string) => `<img src=x onerror="window.hit('${tag}')">`;

describe.skipIf(missing !== undefined)('dashboard markup in job fields', () => {
  it('runs no script from a job name, query, failure reason or stack', async () => {
    const { prefix } = testRedis(defer);
    const connection = createRedis(REDIS_URL, 'worker');
    defer(() => connection.quit());
    const search = new Queue(QUEUES.search, { connection, prefix });
    defer(() => search.close());
    await search.add(
      `name${XSS('name')}`,
      { query: `q${XSS('query')}`, runId: `r${XSS('run')}` },
      {
        jobId: 'xss.fails',
        attempts: 1,
      },
    );
    await search.add(
      'ok',
      { query: `wait${XSS('waitq')}` },
      { jobId: 'xss.waits', delay: 600_000 },
    );
    await new Promise<void>((resolve) => {
      const worker = new Worker(
        QUEUES.search,
        async () => {
          const e = new Error(`reason${XSS('reason')}`);
          e.stack = `stack${XSS('stack')}\n    at x (${XSS('frame')})`;
          throw e;
        },
        { connection, prefix },
      );
      worker.on('failed', () => void worker.close().then(() => resolve()));
    });
    const board = await startDashboard({ redisUrl: REDIS_URL, prefix, port: 0 });
    defer(() => board.close());
    const browser = await launchChromium();
    defer(() => browser.close());
    const page = await browser.context.newPage();
    const hits: string[] = [];
    await page.exposeFunction('hit', (t: string) => hits.push(t));
    for (const status of ['failed', 'delayed']) {
      await page.goto(`${board.url}queue/${QUEUES.search}?status=${status}`);
      await page.waitForTimeout(1500);
      // expand every job card's tabs
      for (const tab of ['Data', 'Options', 'Logs', 'Error']) {
        const buttons = page.getByRole('button', { name: tab, exact: true });
        for (let i = 0; i < (await buttons.count()); i++)
          await buttons
            .nth(i)
            .click()
            .catch(() => {});
        await page.waitForTimeout(300);
      }
    }
    await page.goto(`${board.url}queue/${QUEUES.search}/xss.fails`);
    await page.waitForTimeout(1500);
    const text = await page.content();
    expect(text).toContain('onerror');
    expect(hits).toEqual([]);
  }, 60_000);
});
