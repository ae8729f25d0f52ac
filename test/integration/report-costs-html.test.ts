/**
 * The HTML cost report in a real browser (headless Chromium, see test/helpers/chromium.ts): it
 * renders offline, draws its three charts and the table, and logs no console error. Skipped,
 * saying why, only where Chromium is not installed (.ci/run installs it).
 * `UPDATE_SCREENSHOT=1` also writes docs/cost-report.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCostReport } from '../../src/report/costs/run-report.ts';
import { openStore } from '../../src/store/index.ts';
import { chromiumMissing, launchChromium, openReport } from '../helpers/chromium.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { seedCostFixture } from '../helpers/cost-fixture.ts';
import { tempDir } from '../helpers/tmp.ts';

const missing = chromiumMissing();
if (missing) console.warn(`HTML cost report browser test skipped: ${missing}`);

describe.skipIf(missing !== undefined)('HTML cost report in Chromium', () => {
  const defer = useCleanup();

  it('renders offline with its charts and table, and no console errors', async () => {
    const tmp = tempDir('harvest-html');
    defer(() => tmp.remove());
    let now = 0;
    const store = openStore(path.join(tmp.dir, 'harvest.db'), { now: () => now });
    defer(() => store.close());
    seedCostFixture(store, (ms) => {
      now = ms;
    });
    const file = path.join(tmp.dir, 'costs.html');
    const report = await runCostReport(
      store,
      { by: 'pipeline', format: 'html', out: file, nowMs: Date.UTC(2026, 10, 23) },
      { stdout: process.stdout },
    );
    expect(report.totals.unknownCostCalls).toBeGreaterThan(0);

    const browser = await launchChromium({ width: 1280, height: 900 });
    defer(() => browser.close());
    const { page, problems, requests } = await openReport(browser, file);

    // Runs in the page (no DOM types here): each chart's canvas and how much of it is painted.
    const charts = await page.evaluate(() => {
      interface Canvas {
        id: string;
        width: number;
        height: number;
        getContext(kind: '2d'): {
          getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> };
        } | null;
      }
      const page = globalThis as unknown as {
        harvestCharts: { canvas: Canvas; data: { datasets: unknown[] } }[];
      };
      return page.harvestCharts.map((chart) => {
        const { canvas } = chart;
        const pixels = canvas
          .getContext('2d')
          ?.getImageData(0, 0, canvas.width, canvas.height).data;
        let painted = 0;
        for (let i = 3; i < (pixels?.length ?? 0); i += 4) if ((pixels?.[i] ?? 0) > 0) painted++;
        return {
          id: canvas.id,
          width: canvas.width,
          datasets: chart.data.datasets.length,
          painted,
        };
      });
    });
    expect(charts.map((c) => c.id)).toEqual(['chart-daily', 'chart-per-result', 'chart-outcomes']);
    for (const c of charts) {
      expect(c.width).toBeGreaterThan(100);
      expect(c.datasets).toBeGreaterThan(0);
      // Bars and slices really drawn: a good share of the canvas is painted.
      expect(c.painted).toBeGreaterThan(2000);
    }
    expect(charts[0]?.datasets).toBe(3); // one stacked dataset per pipeline
    const rows = await page.locator('#cost-table tbody tr').count();
    expect(rows).toBe(3);
    expect(await page.locator('#cost-table tfoot').innerText()).toContain('unknown');
    expect(problems).toEqual([]);
    // Offline: the page itself is the only thing loaded.
    expect(requests).toEqual([`file://${file}`]);

    const shot = path.join(tmp.dir, 'cost-report.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(fs.statSync(shot).size).toBeGreaterThan(20_000);
    if (process.env.UPDATE_SCREENSHOT === '1') {
      fs.copyFileSync(shot, path.resolve('docs/cost-report.png'));
    }
  });
});
