/**
 * Round trips of every export format, read back by a reader that is not the writer's: JSON.parse
 * for JSONL, csv-parse for CSV (written by Papa Parse), parquet-wasm with apache-arrow for
 * Parquet (written by hyparquet-writer). What the store query yields is what each file holds, types included.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveFields } from '../../../src/report/export/fields.ts';
import { runExport } from '../../../src/report/export/run-export.ts';
import type { Store } from '../../../src/store/index.ts';
import { expected, readBack } from '../../helpers/export-readers.ts';
import { callEvent, resultsEvent, seedRun, useTempStores } from '../store/helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);
const ONE_MB_MARKDOWN =
  `# Big\r\n\n${'Ünïcödé "quoted", commas, and a line\n'.repeat(28_000)}`.slice(0, 1024 * 1024);

function seed(store: Store): string {
  const { runId } = seedRun(store, { runId: 'run-1', taskCount: 2 });
  store.applyEvents([
    {
      ...resultsEvent(runId, 't0', [], { fetchedAt: T0 + 1 }),
      items: [
        {
          source: 'web',
          position: 0,
          item: {
            url: 'https://example.com/zürich?a=1,b=2',
            title: 'Zürich — 東京 🚀 "quoted", comma',
            description: 'line one\nline two\r\nline "three"',
            markdown: ONE_MB_MARKDOWN,
            links: ['https://a/ü', 'https://b/"q"'],
            metadata: { title: 'T', statusCode: 200, language: 'de', nested: { a: [1, 2, 'x'] } },
          },
        },
        {
          source: 'web',
          position: 1,
          item: { url: 'https://example.com/2', title: '  edge spaces  ', description: ',' },
        },
        {
          source: 'news',
          position: 0,
          item: { url: 'https://news/1', title: 'N', snippet: 'S', date: '2025-01-01' },
        },
        {
          source: 'images',
          position: 0,
          item: {
            url: 'https://pics/1',
            imageUrl: 'https://img/1',
            imageWidth: 640,
            imageHeight: 480,
          },
        },
      ],
    },
    callEvent(runId, 't0', { startedAt: T0, creditsUsed: 7 }),
    callEvent(runId, 't1', { startedAt: T0 + 5, outcome: 'LOST', status: null, creditsUsed: null }),
  ]);
  return runId;
}

describe.each(['jsonl', 'csv', 'parquet'] as const)('export as %s', (format) => {
  const stores = useTempStores();

  async function exportTo(
    store: Store,
    options: Partial<Parameters<typeof runExport>[1]> = {},
  ): Promise<string> {
    const out = path.join(stores.dir(), `out.${format}`);
    await runExport(store, { format, out, ...options }, { stdout: process.stdout });
    return out;
  }

  it('round-trips every result column: unicode, quotes, line breaks, a 1 MB markdown field', async () => {
    const store = stores.open({ now: () => T0 });
    seed(store);
    const columns = resolveFields('results');
    const file = await exportTo(store);
    const back = await readBack(format, file, columns);
    const want = expected(store, { kind: 'results' }, columns);
    expect(want).toHaveLength(4);
    expect(back).toEqual(want);
    const web = back.find((r) => r.position === 0 && r.source === 'web');
    expect(web?.markdown).toBe(ONE_MB_MARKDOWN);
    expect(web?.title).toBe('Zürich — 東京 🚀 "quoted", comma');
    expect(web?.description).toBe('line one\nline two\r\nline "three"');
    expect(web?.metadata).toEqual({
      title: 'T',
      statusCode: 200,
      language: 'de',
      nested: { a: [1, 2, 'x'] },
    });
    expect(web?.fetched_at).toBe(T0 + 1);
    expect(back.find((r) => r.source === 'images')).toMatchObject({ image_width: 640 });
  });

  it('round-trips calls, a LOST call with an unknown (null) cost included', async () => {
    const store = stores.open({ now: () => T0 });
    seed(store);
    const columns = resolveFields('calls');
    const back = await readBack(format, await exportTo(store, { of: 'calls' }), columns);
    expect(back).toEqual(expected(store, { kind: 'calls' }, columns));
    expect(back.map((c) => [c.outcome, c.credits_used])).toEqual([
      ['ok', 7],
      ['LOST', null],
    ]);
  });

  it('writes the chosen fields in the order given', async () => {
    const store = stores.open({ now: () => T0 });
    seed(store);
    const columns = resolveFields('results', ['fetched_at', 'url', 'position']);
    const back = await readBack(
      format,
      await exportTo(store, { fields: ['fetched_at', 'url', 'position'], source: 'news' }),
      columns,
    );
    expect(back).toEqual([{ fetched_at: T0 + 1, url: 'https://news/1', position: 0 }]);
  });

  it('writes a valid, empty file when nothing matches', async () => {
    const store = stores.open({ now: () => T0 });
    seed(store);
    const columns = resolveFields('results');
    const file = await exportTo(store, { sinceMs: T0 + 1_000_000 });
    expect(await readBack(format, file, columns)).toEqual([]);
  });
});
