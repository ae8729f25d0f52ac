import { describe, expect, it } from 'vitest';
import {
  ActiveCrawlsResponseV1Schema,
  ActiveCrawlsResponseV2Schema,
  normaliseV1Crawl,
  ParamsPreviewResponseSchema,
} from '../../../src/contract/index.ts';
import { previewParams } from '../../../src/sandbox/crawls.ts';
import { app } from './helpers.ts';

const keys = [
  { key: 'ka', team: 'alpha', credits: 100 },
  { key: 'kb', team: 'beta', credits: 100 },
];

describe('active crawls', () => {
  it('v2 and v1 shapes, team-scoped and deterministic', async () => {
    const sandbox = app({ keys });
    const get = async (url: string, key: string) =>
      (
        await sandbox.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } })
      ).json();
    const v2 = ActiveCrawlsResponseV2Schema.parse(await get('/v2/crawl/active', 'ka'));
    const v1 = ActiveCrawlsResponseV1Schema.parse(await get('/v1/crawl/active', 'ka'));
    expect(v2.crawls.length).toBeGreaterThanOrEqual(2);
    expect(v2.crawls.every((c) => c.teamId === 'alpha')).toBe(true);
    expect(v1.crawls.map((c) => c.id)).toEqual(v2.crawls.map((c) => c.id));
    for (const c of v1.crawls) {
      const so = c.options.scrapeOptions!;
      expect(typeof so.parsePDF).toBe('boolean');
      expect(so).not.toHaveProperty('parsers');
      expect(so).toMatchObject({
        maxAge: 0,
        skipTlsVerification: false,
        timeout: 30000,
        proxy: 'basic',
      });
    }
    for (const c of v2.crawls) {
      expect(c.options.scrapeOptions).not.toHaveProperty('parsePDF');
      expect(c.options.scrapeOptions).toHaveProperty('parsers');
    }
    // v1 normalised to v2 agrees with the v2 listing on the scrape-option fields both carry
    v1.crawls.forEach((c, i) => {
      const normal = normaliseV1Crawl(c).options.scrapeOptions!;
      expect(normal.parsers).toEqual(v2.crawls[i]!.options.scrapeOptions!.parsers);
      const types = (normal.formats as Array<string | { type: string }>).map((f) =>
        typeof f === 'string' ? f : f.type,
      );
      expect(types).toEqual(
        (v2.crawls[i]!.options.scrapeOptions!.formats as { type: string }[]).map((f) => f.type),
      );
    });
    const beta = ActiveCrawlsResponseV2Schema.parse(await get('/v2/crawl/active', 'kb'));
    expect(beta.crawls.every((c) => c.teamId === 'beta')).toBe(true);
    expect(beta.crawls.map((c) => c.id)).not.toEqual(v2.crawls.map((c) => c.id));
    expect(await get('/v2/crawl/active', 'ka')).toEqual(v2);
    await sandbox.close();
  });
});

describe('params preview', () => {
  it('suggests options from the prompt', async () => {
    expect(
      previewParams(
        'https://x.dev',
        'Crawl the whole blog, at most 200 pages, depth 3, sitemap only',
      ),
    ).toEqual({
      url: 'https://x.dev',
      includePaths: ['/blog/.*'],
      limit: 200,
      maxDiscoveryDepth: 3,
      crawlEntireDomain: true,
      sitemap: 'only',
    });
    expect(previewParams('https://x.dev', 'docs but not the changelog, skip sitemap')).toEqual({
      url: 'https://x.dev',
      includePaths: ['/docs/.*'],
      excludePaths: ['/changelog/.*'],
      sitemap: 'skip',
    });
    const sandbox = app();
    const res = await sandbox.inject({
      method: 'POST',
      url: '/v2/crawl/params-preview',
      headers: { authorization: 'Bearer fc-sandbox' },
      payload: { url: 'https://x.dev', prompt: 'news, 20 pages', origin: 'js-sdk@4.42.0' },
    });
    expect(res.statusCode).toBe(200);
    expect(ParamsPreviewResponseSchema.parse(res.json()).data).toMatchObject({
      includePaths: ['/news/.*'],
      limit: 20,
    });
    await sandbox.close();
  });

  it('400 BAD_REQUEST with the contract validation', async () => {
    const sandbox = app();
    const res = await sandbox.inject({
      method: 'POST',
      url: '/v2/crawl/params-preview',
      headers: { authorization: 'Bearer fc-sandbox' },
      payload: { url: 'not a url' },
    });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body).toMatchObject({ success: false, code: 'BAD_REQUEST' });
    expect(body.error).toMatch(/^Invalid request parameters: url: .*; prompt: /);
    await sandbox.close();
  });
});
