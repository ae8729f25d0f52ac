import { describe, expect, it } from 'vitest';
import {
  formatsRequested,
  LIMITS,
  type SearchRequest,
  SearchRequestSchema,
  withScrapeOptionsDefaults,
  withSearchDefaults,
} from '../../../src/contract/index.ts';

describe('withSearchDefaults', () => {
  it('fills the documented defaults', () => {
    expect(withSearchDefaults({ query: 'q' })).toEqual({
      query: 'q',
      limit: 10,
      sources: [{ type: 'web' }],
      categories: [],
      country: 'US',
      timeout: 60_000,
      ignoreInvalidURLs: false,
      highlights: true,
    });
  });

  it('keeps given values and normalises sources and categories to objects', () => {
    const normalised = withSearchDefaults(
      SearchRequestSchema.parse({
        query: 'q',
        limit: 3,
        sources: ['news', 'images'],
        categories: ['github'],
        country: 'DE',
        timeout: 5000,
        ignoreInvalidURLs: true,
        highlights: false,
        origin: 'js-sdk@4',
      }),
    );
    expect(normalised).toMatchObject({
      limit: 3,
      sources: [{ type: 'news' }, { type: 'images' }],
      categories: [{ type: 'github' }],
      country: 'DE',
      timeout: 5000,
      ignoreInvalidURLs: true,
      highlights: false,
      origin: 'js-sdk@4',
    });
  });

  it('treats an empty sources list as the default', () => {
    expect(withSearchDefaults({ query: 'q', sources: [] }).sources).toEqual([{ type: 'web' }]);
  });

  it('fills scrapeOptions defaults only when scrapeOptions is present, formats default []', () => {
    expect(withSearchDefaults({ query: 'q' }).scrapeOptions).toBeUndefined();
    expect(withSearchDefaults({ query: 'q', scrapeOptions: {} }).scrapeOptions).toEqual({
      formats: [],
      onlyMainContent: true,
      onlyCleanContent: false,
      maxAge: 172_800_000,
      waitFor: 0,
      mobile: false,
      skipTlsVerification: true,
      timeout: 60_000,
      parsers: ['pdf'],
      actions: [],
      removeBase64Images: true,
      blockAds: true,
      proxy: 'auto',
      storeInCache: true,
      lockdown: false,
      redactPII: false,
    });
  });

  it('is deterministic and does not mutate its input', () => {
    const request = SearchRequestSchema.parse({
      query: 'q',
      sources: [{ type: 'web', tbs: 'qdr:d' }],
      scrapeOptions: { formats: ['markdown'], location: { languages: ['de'] } },
    });
    const copy = structuredClone(request);
    const a = withSearchDefaults(request);
    const b = withSearchDefaults(request);
    expect(a).toEqual(b);
    expect(request).toEqual(copy);
    a.sources[0]!.type = 'news';
    expect(request.sources).toEqual([{ type: 'web', tbs: 'qdr:d' }]);
    expect(b.scrapeOptions?.formats).toEqual([{ type: 'markdown' }]);
    expect(b.scrapeOptions?.location).toEqual({ country: 'US', languages: ['de'] });
  });
});

describe('withScrapeOptionsDefaults', () => {
  it('defaults formats to markdown outside search', () => {
    expect(withScrapeOptionsDefaults({}).formats).toEqual([{ type: 'markdown' }]);
  });

  it('extends maxAge to 2 years under lockdown', () => {
    expect(withScrapeOptionsDefaults({ lockdown: true }).maxAge).toBe(
      LIMITS.scrape.maxAgeLockdownDefaultMs,
    );
    expect(withScrapeOptionsDefaults({ lockdown: true, maxAge: 5 }).maxAge).toBe(5);
  });

  it('forces storeInCache false with actions or headers', () => {
    expect(withScrapeOptionsDefaults({ actions: [{ type: 'scrape' }] }).storeInCache).toBe(false);
    expect(
      withScrapeOptionsDefaults({ headers: { a: 'b' }, storeInCache: true }).storeInCache,
    ).toBe(false);
    expect(withScrapeOptionsDefaults({ storeInCache: false }).storeInCache).toBe(false);
  });
});

describe('formatsRequested', () => {
  const table: Array<[SearchRequest, boolean]> = [
    [{ query: 'q' }, false],
    [{ query: 'q', scrapeOptions: {} }, false],
    [{ query: 'q', scrapeOptions: { formats: [] } }, false],
    [{ query: 'q', scrapeOptions: { formats: ['markdown'] } }, true],
  ];
  it.each(table)('%j -> %s', (request, expected) => {
    expect(formatsRequested(request)).toBe(expected);
  });
});
