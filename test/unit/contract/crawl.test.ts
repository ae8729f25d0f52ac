import { describe, expect, it } from 'vitest';
import {
  ActiveCrawlsResponseV1Schema,
  ActiveCrawlsResponseV2Schema,
  type ActiveCrawlV1,
  echoesV2ScrapeOptions,
  normaliseV1Crawl,
  normaliseV1CrawlOptions,
  ParamsPreviewRequestSchema,
  ParamsPreviewResponseSchema,
} from '../../../src/contract/index.ts';

const ID = '0f8e2a4c-5b1d-4c3e-9a7f-2d6b8e1c4a90';
const v1 = (scrapeOptions: Record<string, unknown>): ActiveCrawlV1 => ({
  id: ID,
  teamId: 'team-1',
  url: 'https://example.com',
  created_at: '2026-01-01T00:00:00Z',
  options: { limit: 10, scrapeOptions },
});

describe('active crawls responses', () => {
  it('parse v2 and v1 listings, keeping unknown keys', () => {
    const v2 = ActiveCrawlsResponseV2Schema.parse({
      success: true,
      crawls: [
        {
          id: ID,
          teamId: 't',
          url: 'https://a.com',
          status: 'scraping',
          options: { scrapeOptions: { formats: ['markdown'], parsers: ['pdf'] }, limit: 5 },
        },
      ],
    });
    expect(v2.crawls[0]?.status).toBe('scraping');
    expect(v2.crawls[0]?.options.limit).toBe(5);
    const parsedV1 = ActiveCrawlsResponseV1Schema.parse({ success: true, crawls: [v1({})] });
    expect(parsedV1.crawls).toHaveLength(1);
  });

  it('requires a UUID id', () => {
    const result = ActiveCrawlsResponseV2Schema.safeParse({
      success: true,
      crawls: [{ id: 'nope', teamId: 't', url: 'u', options: {} }],
    });
    expect(result.success).toBe(false);
  });
});

/** The v1 defaults that differ from v2, as every normalised v1 record states them. */
const V1_DEFAULTS = { maxAge: 0, skipTlsVerification: false, timeout: 30_000, proxy: 'basic' };

describe('normaliseV1Crawl', () => {
  it('maps parsePDF to parsers', () => {
    expect(normaliseV1Crawl(v1({ parsePDF: true })).options.scrapeOptions).toEqual({
      parsers: ['pdf'],
      ...V1_DEFAULTS,
    });
    expect(normaliseV1Crawl(v1({ parsePDF: false })).options.scrapeOptions).toEqual({
      parsers: [],
      ...V1_DEFAULTS,
    });
  });

  it('replaces json/extract strings with a json format built from jsonOptions', () => {
    const record = v1({
      formats: ['markdown', 'extract'],
      jsonOptions: { schema: { type: 'object' }, prompt: 'p', systemPrompt: 's' },
    });
    expect(normaliseV1Crawl(record).options.scrapeOptions).toEqual({
      formats: ['markdown', { type: 'json', schema: { type: 'object' }, prompt: 'p' }],
      ...V1_DEFAULTS,
    });
    expect(
      normaliseV1Crawl(v1({ formats: ['json'], jsonOptions: { prompt: 'p' } })).options
        .scrapeOptions,
    ).toEqual({ formats: [{ type: 'json', prompt: 'p' }], ...V1_DEFAULTS });
  });

  it('appends a json format when only jsonOptions is present', () => {
    expect(
      normaliseV1Crawl(v1({ formats: ['markdown'], jsonOptions: { prompt: 'p' } })).options
        .scrapeOptions,
    ).toEqual({ formats: ['markdown', { type: 'json', prompt: 'p' }], ...V1_DEFAULTS });
  });

  it('maps changeTrackingOptions and screenshot@fullPage', () => {
    const record = v1({
      formats: ['markdown', 'changeTracking', 'screenshot@fullPage', 'screenshot'],
      changeTrackingOptions: { modes: ['git-diff'], tag: null },
    });
    expect(normaliseV1Crawl(record).options.scrapeOptions).toEqual({
      formats: [
        'markdown',
        { type: 'changeTracking', modes: ['git-diff'], tag: null },
        { type: 'screenshot', fullPage: true },
        'screenshot',
      ],
      ...V1_DEFAULTS,
    });
  });

  it('appends a changeTracking format when only changeTrackingOptions is present', () => {
    const record = v1({
      formats: ['markdown'],
      changeTrackingOptions: { modes: ['json'], schema: { type: 'object' }, prompt: 'p', tag: 't' },
    });
    expect(normaliseV1Crawl(record).options.scrapeOptions?.formats).toEqual([
      'markdown',
      {
        type: 'changeTracking',
        modes: ['json'],
        schema: { type: 'object' },
        prompt: 'p',
        tag: 't',
      },
    ]);
  });

  it('states the v1 defaults that differ from v2, keeping the values the record sent', () => {
    expect(normaliseV1Crawl(v1({ formats: ['markdown'] })).options.scrapeOptions).toEqual({
      formats: ['markdown'],
      ...V1_DEFAULTS,
    });
    expect(
      normaliseV1Crawl(v1({ maxAge: 3_600_000, timeout: 45_000, proxy: 'stealth' })).options
        .scrapeOptions,
    ).toEqual({ ...V1_DEFAULTS, maxAge: 3_600_000, timeout: 45_000, proxy: 'stealth' });
  });

  it('adds no v1 defaults to options already wholly in v2 names', () => {
    const v2Names = { formats: [{ type: 'markdown' }], parsers: ['pdf'], onlyMainContent: true };
    expect(normaliseV1Crawl(v1(v2Names)).options.scrapeOptions).toEqual(v2Names);
    expect(echoesV2ScrapeOptions(v2Names)).toBe(true);
    expect(echoesV2ScrapeOptions({ lockdown: false })).toBe(true);
    // a v1-only name makes the options v1, whatever else they carry
    expect(echoesV2ScrapeOptions({ parsers: ['pdf'], parsePDF: true })).toBe(false);
    expect(echoesV2ScrapeOptions({ formats: [{ type: 'markdown' }, 'extract'] })).toBe(false);
    // nothing that tells them apart: they came from the v1 listing, so they are v1
    expect(echoesV2ScrapeOptions({ formats: ['markdown'], onlyMainContent: true })).toBe(false);
  });

  it('keeps fields that are already in v2 names, and everything else', () => {
    const record = v1({
      parsers: [{ type: 'pdf', mode: 'fast' }],
      parsePDF: false,
      formats: [{ type: 'json', prompt: 'x' }],
      jsonOptions: { prompt: 'ignored' },
      onlyMainContent: true,
      timeout: 45_000,
      proxy: 'enhanced',
    });
    const out = normaliseV1Crawl(record);
    expect(out.options.scrapeOptions).toEqual({
      parsers: [{ type: 'pdf', mode: 'fast' }],
      formats: [{ type: 'json', prompt: 'x' }],
      onlyMainContent: true,
      timeout: 45_000,
      proxy: 'enhanced',
      maxAge: 0,
      skipTlsVerification: false,
    });
    expect(out.options.limit).toBe(10);
    expect(out.created_at).toBe('2026-01-01T00:00:00Z');
  });

  it('maps v1 crawl options to their v2 names', () => {
    const record: ActiveCrawlV1 = {
      id: ID,
      teamId: 't',
      url: 'u',
      options: { limit: 5, maxDepth: 3, ignoreSitemap: true, allowBackwardCrawling: true },
    };
    expect(normaliseV1Crawl(record).options).toEqual({
      limit: 5,
      maxDiscoveryDepth: 3,
      sitemap: 'skip',
      crawlEntireDomain: true,
    });
    expect(normaliseV1CrawlOptions({ ignoreSitemap: false, allowBackwardCrawling: false })).toEqual(
      { sitemap: 'include', crawlEntireDomain: false },
    );
    // v2 names present win; a v1 value of an unexpected type stays under its own name
    expect(
      normaliseV1CrawlOptions({ maxDepth: 2, maxDiscoveryDepth: 7, ignoreSitemap: 'x' }),
    ).toEqual({ maxDiscoveryDepth: 7, ignoreSitemap: 'x' });
  });

  it('does not mutate its input and handles a record without scrapeOptions', () => {
    const record = v1({ parsePDF: true, formats: ['extract'] });
    const copy = structuredClone(record);
    normaliseV1Crawl(record);
    expect(record).toEqual(copy);
    const bare: ActiveCrawlV1 = { id: ID, teamId: 't', url: 'u', options: {} };
    expect(normaliseV1Crawl(bare)).toEqual(bare);
  });
});

describe('params preview', () => {
  it('request: url and prompt (max 10000), nothing else', () => {
    const ok = { url: 'https://example.com', prompt: 'only the blog' };
    expect(ParamsPreviewRequestSchema.safeParse(ok).success).toBe(true);
    expect(
      ParamsPreviewRequestSchema.safeParse({ ...ok, prompt: 'a'.repeat(10_000) }).success,
    ).toBe(true);
    expect(
      ParamsPreviewRequestSchema.safeParse({ ...ok, prompt: 'a'.repeat(10_001) }).success,
    ).toBe(false);
    expect(ParamsPreviewRequestSchema.safeParse({ ...ok, url: 'not a url' }).success).toBe(false);
    expect(ParamsPreviewRequestSchema.safeParse({ ...ok, limit: 5 }).success).toBe(false);
    expect(ParamsPreviewRequestSchema.safeParse({ url: ok.url }).success).toBe(false);
  });

  it('response: data with url and suggested options', () => {
    const parsed = ParamsPreviewResponseSchema.parse({
      success: true,
      data: { url: 'https://example.com', includePaths: ['/blog/*'], limit: 50, newField: 1 },
    });
    expect(parsed.data.includePaths).toEqual(['/blog/*']);
    expect(parsed.data.newField).toBe(1);
  });
});
