import zlib from 'node:zlib';
import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import {
  CODEC_BROTLI,
  CODEC_TEXT,
  CODEC_ZSTD,
  DELETE_BATCH,
  decodeContent,
  deleteContentBatch,
  deleteUnreferencedContents,
  encodeContent,
  restoreItemJson,
  STORE_FROM_CHARS,
  splitItem,
  unreferencedContents,
} from '../../../src/store/contents.ts';
import { resultsEvent, seedRun, useTempStores, webItem } from './helpers.ts';

const PAGE = `# Heading\n\n${'A paragraph of prose about harbour cranes, repeated. '.repeat(80)}`;

function scraped(n: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  return webItem(n, {
    markdown: PAGE,
    html: `<h1>Page ${n}</h1><p>${PAGE}</p>`,
    rawHtml: `<!DOCTYPE html><html><body><p>${PAGE}</p></body></html>`,
    links: [`https://example.com/${n}/a`, `https://example.com/${n}/b`],
    metadata: { title: `Page ${n}`, statusCode: 200, sourceURL: `https://example.com/page-${n}` },
    summary: `Summary of page ${n}`,
    json: { facts: [n, 'x'] },
    screenshot: `https://media.example/s${n}.png`,
    ...over,
  });
}

function countContents(file: string): number {
  const db = new Sqlite(file, { readonly: true });
  try {
    return db.prepare<[], number>('SELECT COUNT(*) FROM contents').pluck().get() ?? 0;
  } finally {
    db.close();
  }
}

describe('splitItem and restoreItemJson', () => {
  it('keep the listing fields and short values in item_json and give back the item key for key', () => {
    const item = { position: 3, ...scraped(1), markdown: null, odd: [1, { a: 2 }] };
    const { itemJson, texts } = splitItem(item);
    expect(JSON.parse(itemJson)).toEqual({
      ...item,
      html: 0,
      rawHtml: 0,
    });
    expect(Object.keys(texts).sort()).toEqual(['html', 'rawHtml']);
    expect(restoreItemJson(itemJson, texts)).toBe(JSON.stringify(item));
  });

  it('store long links, metadata and other outputs, the others together as one value', () => {
    const long = 'x'.repeat(STORE_FROM_CHARS);
    const item = { ...scraped(1), links: [long], metadata: { long }, summary: long, odd: 1 };
    const { itemJson, texts } = splitItem(item);
    expect(JSON.parse(itemJson)).toMatchObject({
      links: 0,
      metadata: 0,
      summary: 0,
      json: 0,
      odd: 0,
    });
    expect(Object.keys(texts).sort()).toEqual([
      'extra',
      'html',
      'links',
      'markdown',
      'metadata',
      'rawHtml',
    ]);
    expect(JSON.parse(texts.extra ?? '')).toEqual({
      summary: long,
      json: { facts: [1, 'x'] },
      odd: 1,
    });
    expect(restoreItemJson(itemJson, texts)).toBe(JSON.stringify(item));
  });

  it('leave an item without content as it is', () => {
    const item = webItem(2);
    expect(splitItem(item)).toEqual({ itemJson: JSON.stringify(item), texts: {} });
  });
});

describe('encodeContent', () => {
  const hasZstd = typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync === 'function';

  it('compresses prose (zstd where this Node has it, else brotli), keeps short values as text', () => {
    const long = encodeContent(PAGE);
    expect(long.codec).toBe(hasZstd ? CODEC_ZSTD : CODEC_BROTLI);
    expect(long.data.length).toBeLessThan(long.size / 5);
    expect(decodeContent(long.codec, long.data).toString('utf8')).toBe(PAGE);
    const brotli = encodeContent(PAGE, CODEC_BROTLI);
    expect(brotli.codec).toBe(CODEC_BROTLI);
    expect(decodeContent(brotli.codec, brotli.data).toString('utf8')).toBe(PAGE);
    const short = encodeContent('ok');
    expect(short).toEqual({ codec: CODEC_TEXT, size: 2, data: Buffer.from('ok') });
  });

  it.runIf(!hasZstd)(
    `refuses zstd on Node ${process.versions.node}, naming the Node that reads it`,
    () => {
      expect(() => decodeContent(CODEC_ZSTD, Buffer.from('x'))).toThrow(
        /zstd, which Node [\d.]+ cannot read: open this database with Node 22\.15 or later/,
      );
    },
  );

  it('names a codec it cannot read', () => {
    expect(() => decodeContent(9, Buffer.from('x'))).toThrow(/codec 9.*upgrade harvest/);
  });
});

describe('contents in the store', () => {
  const stores = useTempStores();

  it('identical answers in later runs add no content rows', () => {
    const store = stores.open();
    const items = [scraped(1), scraped(2), scraped(3, { markdown: `${PAGE} (3)` })];
    const first = seedRun(store, { taskCount: 1 });
    store.applyEvents([resultsEvent(first.runId, 't0', items)]);
    const stored = countContents(store.path);
    expect(stored).toBeGreaterThan(0);
    for (let run = 0; run < 3; run++) {
      const { runId } = seedRun(store, { taskCount: 1 });
      store.applyEvents([resultsEvent(runId, 't0', items)]);
      expect(store.results.forTask(runId, 't0').map((r) => JSON.parse(r.itemJson))).toEqual(items);
    }
    expect(countContents(store.path)).toBe(stored);
    const [row] = store.results.forTask(first.runId, 't0');
    expect(row).toMatchObject({
      markdown: PAGE,
      linksJson: JSON.stringify(items[0]?.links),
      metadataJson: JSON.stringify(items[0]?.metadata),
      itemJson: JSON.stringify(items[0]),
    });
  });

  it('deleteUnreferencedContents removes only what no result references', () => {
    const store = stores.open();
    const a = seedRun(store, { taskCount: 1 });
    const b = seedRun(store, { taskCount: 1 });
    store.applyEvents([resultsEvent(a.runId, 't0', [scraped(1), scraped(2)])]);
    store.applyEvents([resultsEvent(b.runId, 't0', [scraped(2)])]);
    const all = countContents(store.path);
    const db = new Sqlite(store.path);
    try {
      expect(deleteUnreferencedContents(db)).toEqual({ rows: 0, bytes: 0 });
      db.prepare('DELETE FROM results WHERE run_id = ?').run(a.runId);
      const removed = deleteUnreferencedContents(db);
      // Page 1's html; its markdown and raw html are page 2's too, its short values in its row.
      expect(removed.rows).toBe(1);
      expect(removed.bytes).toBeGreaterThan(0);
      expect(countContents(store.path)).toBe(all - 1);
    } finally {
      db.close();
    }
    expect(store.results.forTask(b.runId, 't0').map((r) => JSON.parse(r.itemJson))).toEqual([
      scraped(2),
    ]);
  });

  it('keeps a content a result written after it was found unreferenced now references', () => {
    const store = stores.open();
    const a = seedRun(store, { taskCount: 1 });
    const b = seedRun(store, { taskCount: 1 });
    store.applyEvents([resultsEvent(a.runId, 't0', [scraped(1)])]);
    const db = new Sqlite(store.path);
    try {
      db.prepare('DELETE FROM results WHERE run_id = ?').run(a.runId);
      const found = unreferencedContents(db);
      expect(found.length).toBeGreaterThan(0);
      // A pool stores the same page again meanwhile: it finds the content there and keeps it.
      store.applyEvents([resultsEvent(b.runId, 't0', [scraped(1)])]);
      expect(deleteContentBatch(db, found)).toEqual({ rows: 0, bytes: 0 });
      // Checked by index, not by a scan of every result.
      const plan = db
        .prepare(
          `EXPLAIN QUERY PLAN SELECT 1 FROM contents c
           WHERE NOT EXISTS (SELECT 1 FROM results WHERE raw_html_hash = c.hash)`,
        )
        .all() as { detail: string }[];
      expect(plan.map((p) => p.detail).join('\n')).toContain('results_raw_html_hash');
    } finally {
      db.close();
    }
    expect(store.results.forTask(b.runId, 't0').map((r) => JSON.parse(r.itemJson))).toEqual([
      scraped(1),
    ]);
  });

  it('removes unreferenced contents in batches, each its own transaction', () => {
    const store = stores.open();
    const run = seedRun(store, { taskCount: 1 });
    const pages = Array.from({ length: DELETE_BATCH + 3 }, (_, i) => ({
      url: `https://p.example/${i}`,
      markdown: `# Page ${i}\n\n${'text '.repeat(300)}`,
    }));
    store.applyEvents([resultsEvent(run.runId, 't0', pages)]);
    const db = new Sqlite(store.path);
    try {
      db.prepare('DELETE FROM results').run();
      const batches: number[] = [];
      const removed = deleteUnreferencedContents(db, (batch) => {
        expect(db.inTransaction).toBe(false);
        const done = batch();
        batches.push(done.rows);
        return done;
      });
      expect(batches).toEqual([DELETE_BATCH, 3]);
      expect(removed.rows).toBe(DELETE_BATCH + 3);
      expect(countContents(store.path)).toBe(0);
    } finally {
      db.close();
    }
  });
});
