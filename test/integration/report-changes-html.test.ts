/**
 * The HTML changes report in a real browser (headless Chromium, see test/helpers/chromium.ts):
 * it renders offline, draws a rank chart per search over the runs, lists the latest run's
 * changes, and logs no console error. Skipped, saying why, only where Chromium is missing.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runChangeReport } from '../../src/report/changes/run-report.ts';
import { openStore } from '../../src/store/index.ts';
import { clock, runWith } from '../helpers/changes-fixture.ts';
import { chromiumMissing, launchChromium, openReport } from '../helpers/chromium.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { tempDir } from '../helpers/tmp.ts';

const missing = chromiumMissing();
if (missing) console.warn(`HTML changes report browser test skipped: ${missing}`);

describe.skipIf(missing !== undefined)('HTML changes report in Chromium', () => {
  const defer = useCleanup();

  it('renders offline with a rank chart per search and the changes table', async () => {
    const tmp = tempDir('harvest-changes-html');
    defer(() => tmp.remove());
    const store = openStore(path.join(tmp.dir, 'harvest.db'), { now: clock });
    defer(() => store.close());
    runWith(store, 'r1', {
      us: [
        ['a', 'A'],
        ['b', 'B'],
        ['c', 'C'],
      ],
      de: [['x', 'X']],
    });
    runWith(store, 'r2', {
      us: [
        ['b', 'B'],
        ['a', 'A'],
        ['c', 'C2'],
      ],
      de: [['x', 'X']],
    });
    runWith(store, 'r3', {
      us: [
        ['c', 'C2'],
        ['b', 'B2'],
        ['d', 'D'],
      ],
      de: [['y', 'Y']],
    });
    const file = path.join(tmp.dir, 'changes.html');
    await runChangeReport(store, { format: 'html', out: file }, { stdout: process.stdout });

    const browser = await launchChromium({ width: 1280, height: 900 });
    defer(() => browser.close());
    const { page, problems, requests } = await openReport(browser, file);

    // Runs in the page: each chart's runs, lines and how much of its canvas is painted.
    const charts = await page.evaluate(() => {
      interface Canvas {
        width: number;
        height: number;
        getContext(kind: '2d'): {
          getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> };
        } | null;
      }
      const page = globalThis as unknown as {
        harvestCharts: {
          canvas: Canvas;
          data: { labels: unknown[]; datasets: { data: unknown[] }[] };
        }[];
      };
      return page.harvestCharts.map(({ canvas, data }) => {
        const pixels = canvas
          .getContext('2d')
          ?.getImageData(0, 0, canvas.width, canvas.height).data;
        let painted = 0;
        for (let i = 3; i < (pixels?.length ?? 0); i += 4) if ((pixels?.[i] ?? 0) > 0) painted++;
        return {
          runs: data.labels.length,
          lines: data.datasets.map((d) => d.data),
          painted,
        };
      });
    });
    expect(charts).toHaveLength(2);
    // The busiest search first: in `us`, c went from #3 to #1 and b stayed #2 on r2.
    expect(charts[0]).toMatchObject({
      runs: 3,
      lines: [
        [3, 3, 1],
        [2, 1, 2],
        [null, null, 3],
      ],
    });
    for (const c of charts) expect(c.painted).toBeGreaterThan(2000);
    const statuses = await page.locator('#changes tbody tr').allInnerTexts();
    expect(statuses.map((s) => s.split('\t')[0])).toEqual(
      expect.arrayContaining(['new', 'dropped', 'changed', 'moved']),
    );
    expect(await page.locator('#counts tfoot').innerText()).toContain('total');
    expect(problems).toEqual([]);
    expect(requests).toEqual([`file://${file}`]);
  });
});
