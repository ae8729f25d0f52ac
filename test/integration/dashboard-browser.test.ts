/**
 * The dashboard in a real browser (headless Chromium, see test/helpers/chromium.ts): the page
 * renders every harvest queue with its counts, and offers job actions only with
 * --allow-actions. Skipped, saying why, only where Chromium is not installed.
 */
import { describe, expect, it } from 'vitest';
import { type RunningDashboard, startDashboard } from '../../src/dashboard/server.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { FAILED_REASON, searchQueueWithJobs } from '../helpers/queues.ts';
import { REDIS_URL } from '../helpers/redis.ts';

const missing = chromiumMissing();
if (missing) console.warn(`dashboard browser tests skipped: ${missing}`);
const defer = useCleanup();

async function dashboard(prefix: string, allowActions: boolean): Promise<RunningDashboard> {
  const running = await startDashboard({ redisUrl: REDIS_URL, prefix, port: 0, allowActions });
  defer(() => running.close());
  return running;
}

describe.skipIf(missing !== undefined)('dashboard in Chromium', () => {
  it('shows every queue, and job actions only when allowed', async () => {
    const { prefix } = await searchQueueWithJobs(defer);
    const browser = await launchChromium();
    defer(() => browser.close());
    const page = await browser.context.newPage();

    const readOnly = await dashboard(prefix, false);
    await page.goto(readOnly.url);
    // one card per queue, with its job count
    const card = (name: string) =>
      page
        .getByRole('listitem')
        .filter({ has: page.getByRole('link', { name, exact: true }) })
        .filter({ hasText: /\d+ Jobs?/ });
    for (const name of Object.values(QUEUES)) await card(name).waitFor();
    expect(await card(QUEUES.search).innerText()).toMatch(/FAILED\s+1/);
    expect(await page.title()).toBe('harvest (read-only)');
    await page.goto(`${readOnly.url}queue/${QUEUES.search}?status=failed`);
    await page.getByText(FAILED_REASON).first().waitFor();
    expect(await page.getByRole('button', { name: /retry/i }).count()).toBe(0);

    const acting = await dashboard(prefix, true);
    await page.goto(`${acting.url}queue/${QUEUES.search}?status=failed`);
    await page.getByText(FAILED_REASON).first().waitFor();
    expect(await page.getByRole('button', { name: /retry/i }).count()).toBeGreaterThan(0);
  });
});
