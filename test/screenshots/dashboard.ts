/**
 * Screenshots of `harvest dashboard` for the README (`npm run screenshots`): a real run
 * against the sandbox (one search in four answers 500, and each task has one attempt, so some
 * fail), then a second run left waiting without workers, shown by the read-only dashboard in
 * headless Chromium. Everything runs under a fresh Redis prefix and a temp database, removed
 * afterwards. Needs Redis on 127.0.0.1:6379 and /usr/bin/chromium.
 *
 * Writes docs/dashboard.png (the queues) and docs/dashboard-failed.png (a failed search job).
 */
import path from 'node:path';
import { startDashboard } from '../../src/dashboard/server.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { chromiumMissing, launchChromium } from '../helpers/chromium.ts';
import { startHarness } from '../helpers/harness.ts';

const DOCS = path.resolve(import.meta.dirname, '../../docs');

const missing = chromiumMissing();
if (missing) {
  console.error(`screenshots: ${missing}`);
  process.exit(1);
}

const h = await startHarness({
  sandbox: { faults: { error500: 0.25 }, latency: { minMs: 5, maxMs: 30 }, seed: 7 },
});
try {
  const topics = ['solar', 'wind', 'hydro', 'geothermal', 'biomass', 'tidal'];
  const countries = ['US', 'DE', 'FR', 'JP'];
  const finished = h.writePipeline(
    'energy-news',
    `name: energy-news\nrun:\n  maxAttempts: 1\nsearches:\n  - query: "{topic} energy news"\n    matrix:\n      topic: [${topics.join(', ')}]\n      country: [${countries.join(', ')}]\n`,
  );
  const first = await startRun(h.runtime, finished, { logger: h.logger });
  const pool = await h.startPool({ concurrency: 4 });
  await waitForRun(h.runtime, first.runId, { pollMs: 100 });
  await pool.close();
  const waiting = h.writePipeline(
    'papers',
    `name: papers\nsearches:\n  - query: "{topic} survey"\n    categories: [research]\n    matrix:\n      topic: [retrieval, ranking, crawling, deduplication, summarisation]\n`,
  );
  await startRun(h.runtime, waiting, { logger: h.logger });

  const dashboard = await startDashboard({
    redisUrl: h.settings.redisUrl,
    prefix: h.settings.queuePrefix,
    port: 0,
  });
  const browser = await launchChromium({ width: 1280, height: 720 });
  try {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1280, height: 340 }); // the cards, not the empty page below
    await page.goto(dashboard.url);
    await page
      .getByText(/\d+ Jobs/)
      .first()
      .waitFor();
    await page.waitForTimeout(500); // the count bars animate in
    await page.screenshot({ path: path.join(DOCS, 'dashboard.png') });
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.goto(`${dashboard.url}queue/search?status=failed`);
    await page.getByText('HTTP 500').first().waitFor();
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(DOCS, 'dashboard-failed.png') });
    console.log(`wrote ${path.join(DOCS, 'dashboard.png')} and dashboard-failed.png`);
  } finally {
    await browser.close();
    await dashboard.close();
  }
} finally {
  await h.stop();
}
