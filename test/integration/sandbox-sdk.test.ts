import Firecrawl from '@mendable/firecrawl-js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.ts';

let sandbox: RunningSandbox;
let client: Firecrawl;
beforeEach(async () => {
  sandbox = await startSandbox({ port: 0 });
  client = new Firecrawl({ apiKey: 'fc-sandbox', apiUrl: sandbox.url });
});
afterEach(async () => {
  await sandbox.close();
});

describe('the official JS SDK against the sandbox', () => {
  it('searches web, news and images', async () => {
    // Result counts vary by query (some sources answer nothing): take the first query that fills all three.
    let result = await client.search('electric cars 0', {
      limit: 4,
      sources: ['web', 'news', 'images'],
    });
    for (
      let i = 1;
      i < 10 && !(result.web?.length && result.news?.length && result.images?.length);
      i++
    ) {
      result = await client.search(`electric cars ${i}`, {
        limit: 4,
        sources: ['web', 'news', 'images'],
      });
    }
    expect(result.web?.length).toBeGreaterThan(0);
    expect(result.news?.length).toBeGreaterThan(0);
    expect(result.images?.length).toBeGreaterThan(0);
    for (const key of ['web', 'news', 'images'] as const)
      expect(result[key]!.length).toBeLessThanOrEqual(4);
    expect(Object.keys(sandbox.ledger().teams.sandbox?.calls ?? {})).toEqual(['200']);
  });

  it('searches with scrape formats', async () => {
    const result = await client.search('solar storage', {
      limit: 3,
      scrapeOptions: { formats: ['markdown', 'links', { type: 'screenshot' }] },
    });
    const docs = (result.web ?? []) as Array<{
      markdown?: unknown;
      links?: unknown;
      screenshot?: unknown;
      metadata?: { statusCode?: number };
    }>;
    expect(docs.length).toBeGreaterThan(0);
    const ok = docs.filter((d) => d.metadata?.statusCode === 200);
    expect(ok.length).toBeGreaterThan(0);
    for (const d of ok) {
      expect(d.markdown).toEqual(expect.any(String));
      expect(d.links).toEqual(expect.any(Array));
      expect(d.screenshot).toMatch(/\/media\/[0-9a-f]+\.png\?X-Goog-/);
    }
    expect(sandbox.ledger().teams.sandbox?.creditsCharged).toBeGreaterThan(0);
  });

  it('lists active crawls and previews crawl params', async () => {
    const active = await client.getActiveCrawls();
    expect(active.success).toBe(true);
    expect(active.crawls.length).toBeGreaterThan(0);
    expect(active.crawls.every((c) => c.teamId === 'sandbox')).toBe(true);
    const preview = await client.crawlParamsPreview(
      'https://docs.example.com',
      'the docs, 30 pages',
    );
    expect(preview).toMatchObject({ includePaths: ['/docs/.*'], limit: 30 });
  });
});
