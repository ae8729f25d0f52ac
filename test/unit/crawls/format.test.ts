import { describe, expect, it } from 'vitest';
import { formatActiveCrawls, formatPreview } from '../../../src/crawls/format.ts';

const crawl = (id: string, options: Record<string, unknown>) => ({
  id,
  teamId: 'alpha',
  url: `https://${id.slice(0, 4)}.example.com`,
  created_at: '2026-01-05T10:00:30.000Z',
  options,
});

describe('formatActiveCrawls', () => {
  it('one aligned line per crawl, format names from strings and objects', () => {
    const text = formatActiveCrawls({
      apiVersion: 'v1',
      crawls: [
        crawl('0f8e2a4c-5b1d-4c3e-9a7f-2d6b8e1c4a90', {
          limit: 200,
          maxDiscoveryDepth: 3,
          scrapeOptions: { formats: ['markdown', { type: 'json', prompt: 'p' }] },
        }),
        crawl('aaaa2a4c-5b1d-4c3e-9a7f-2d6b8e1c4a91', {}),
      ],
    });
    expect(text).toMatchInlineSnapshot(`
      "2 active crawls of team alpha (API v1, shown in v2 names)
      ID                                    STARTED           LIMIT  DEPTH  FORMATS        URL
      0f8e2a4c-5b1d-4c3e-9a7f-2d6b8e1c4a90  2026-01-05 10:00  200    3      markdown,json  https://0f8e.example.com
      aaaa2a4c-5b1d-4c3e-9a7f-2d6b8e1c4a91  2026-01-05 10:00  -      -      -              https://aaaa.example.com"
    `);
  });

  it('says so when there is none', () => {
    expect(formatActiveCrawls({ apiVersion: 'v2', crawls: [] })).toBe('no active crawls (API v2)');
  });
});

describe('formatPreview', () => {
  it('lists the suggested options under the url', () => {
    const text = formatPreview({
      url: 'https://example.com',
      prompt: 'the blog',
      suggested: {
        url: 'https://example.com',
        includePaths: ['/blog/.*', '/news/.*'],
        excludePaths: [],
        limit: 50,
        crawlEntireDomain: false,
        scrapeOptions: { formats: ['markdown'] },
      },
    });
    expect(text).toMatchInlineSnapshot(`
      "suggested crawl of https://example.com
        includePaths       /blog/.*, /news/.*
        excludePaths       (none)
        limit              50
        crawlEntireDomain  false
        scrapeOptions      {"formats":["markdown"]}"
    `);
    expect(
      formatPreview({ url: 'u', prompt: 'p', suggested: { url: 'https://example.com' } }),
    ).toContain('(no options');
  });
});
