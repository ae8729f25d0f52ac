import { describe, expect, it } from 'vitest';
import {
  estimateSearchCredits,
  pdfPagesUnbounded,
  type ScrapeOptions,
  type SearchRequest,
  scrapeCreditsPerDocument,
  searchCredits,
  searchPartCredits,
} from '../../../src/contract/index.ts';

describe('searchPartCredits', () => {
  it.each([
    [0, undefined, 0],
    [1, undefined, 2],
    [10, undefined, 2],
    [11, undefined, 4],
    [100, undefined, 20],
    [0, ['zdr'], 0],
    [1, ['zdr'], 10],
    [25, ['zdr'], 30],
    [25, ['anon'], 6],
    [25, ['anon', 'zdr'], 30],
  ] as const)('%d results, enterprise %j -> %d', (results, enterprise, credits) => {
    const request = enterprise === undefined ? {} : { enterprise: [...enterprise] };
    expect(searchPartCredits(request, results)).toBe(credits);
  });

  it('adds 2 per scanned URL, nothing for 0 results', () => {
    expect(searchPartCredits({}, 10, 10)).toBe(22);
    expect(searchPartCredits({}, 0, 5)).toBe(0);
  });
});

describe('scrapeCreditsPerDocument', () => {
  const table: Array<[string, ScrapeOptions, number]> = [
    ['markdown', { formats: ['markdown'] }, 1],
    ['json makes it 5', { formats: ['markdown', { type: 'json', prompt: 'p' }] }, 5],
    ['json string', { formats: ['json'] }, 5],
    ['question +4', { formats: [{ type: 'question', question: 'q' }] }, 5],
    ['highlights +4', { formats: [{ type: 'highlights', query: 'q' }] }, 5],
    ['lockdown +4', { formats: ['markdown'], lockdown: true }, 5],
    ['redactPII true +4', { formats: ['markdown'], redactPII: true }, 5],
    ['redactPII options +4', { formats: ['markdown'], redactPII: { mode: 'fast' } }, 5],
    ['redactPII false', { formats: ['markdown'], redactPII: false }, 1],
    [
      'everything',
      {
        formats: [
          { type: 'json' },
          { type: 'question', question: 'q' },
          { type: 'highlights', query: 'q' },
        ],
        lockdown: true,
        redactPII: true,
      },
      21,
    ],
    ['enhanced proxy costs the same', { formats: ['markdown'], proxy: 'enhanced' }, 1],
  ];
  it.each(table)('%s -> %d', (_name, options, credits) => {
    expect(scrapeCreditsPerDocument(options)).toBe(credits);
  });

  it('adds 1 per PDF page beyond the first when PDFs are parsed', () => {
    const options = { formats: ['markdown' as const] };
    expect(scrapeCreditsPerDocument(options, { pdfPages: 1 })).toBe(1);
    expect(scrapeCreditsPerDocument(options, { pdfPages: 12 })).toBe(12);
    expect(scrapeCreditsPerDocument({ ...options, parsers: ['pdf'] }, { pdfPages: 3 })).toBe(3);
    expect(scrapeCreditsPerDocument({ ...options, parsers: [] }, { pdfPages: 12 })).toBe(1);
    expect(scrapeCreditsPerDocument({ formats: ['json'] }, { pdfPages: 3 })).toBe(7);
  });
});

describe('searchCredits', () => {
  const md: SearchRequest = { query: 'q', scrapeOptions: { formats: ['markdown'] } };

  it('costs only the search part without formats', () => {
    expect(searchCredits({ scrapeOptions: {} }, { totalResults: 10, scrapedOk: 10 })).toBe(2);
    expect(searchCredits({}, { totalResults: 15, scrapedOk: 0 })).toBe(4);
  });

  it('adds the scrape part per successfully scraped result', () => {
    expect(searchCredits(md, { totalResults: 10, scrapedOk: 10 })).toBe(12);
    expect(searchCredits(md, { totalResults: 10, scrapedOk: 7 })).toBe(9);
    expect(searchCredits(md, { totalResults: 0, scrapedOk: 0 })).toBe(0);
  });

  it('adds PDF pages per document and scanned URLs', () => {
    expect(
      searchCredits(md, { totalResults: 3, scrapedOk: 3, pdfPagesByDoc: [5, 1], scannedUrls: 3 }),
    ).toBe(2 + 6 + 3 + 4);
  });

  it('combines enterprise zdr with json', () => {
    const request: SearchRequest = {
      query: 'q',
      enterprise: ['zdr'],
      scrapeOptions: { formats: [{ type: 'json', prompt: 'p' }] },
    };
    expect(searchCredits(request, { totalResults: 20, scrapedOk: 19 })).toBe(20 + 95);
  });
});

describe('estimateSearchCredits', () => {
  it('min is 0; max assumes limit results per source, all scraped', () => {
    expect(estimateSearchCredits({})).toEqual({ min: 0, max: 2 });
    expect(estimateSearchCredits({ limit: 100 })).toEqual({ min: 0, max: 20 });
    expect(estimateSearchCredits({ limit: 10, sources: ['web', 'news', 'images'] })).toEqual({
      min: 0,
      max: 6,
    });
    expect(estimateSearchCredits({ limit: 10, sources: [], ...{} })).toEqual({ min: 0, max: 2 });
    expect(
      estimateSearchCredits({
        limit: 20,
        sources: [{ type: 'web' }, { type: 'news' }],
        scrapeOptions: { formats: ['markdown'] },
      }),
    ).toEqual({ min: 0, max: 8 + 40 });
  });

  it('counts every result as a PDF of maxPages pages when a pdf parser bounds them', () => {
    const formats = { formats: ['markdown' as const] };
    expect(estimateSearchCredits({ limit: 10, scrapeOptions: formats }).max).toBe(2 + 10);
    expect(
      estimateSearchCredits({
        limit: 10,
        scrapeOptions: { ...formats, parsers: [{ type: 'pdf', maxPages: 5 }] },
      }).max,
    ).toBe(2 + 10 * 5);
    // PDFs returned whole (no pdf parser) cost one credit each, whatever their pages.
    expect(
      estimateSearchCredits({ limit: 10, scrapeOptions: { ...formats, parsers: [] } }).max,
    ).toBe(2 + 10);
  });

  it('reads the bound of the first pdf parser object, as the service does', () => {
    const formats = { formats: ['markdown' as const] };
    const parsers = [{ type: 'pdf' as const }, { type: 'pdf' as const, maxPages: 2 }];
    // The first pdf parser sets no maxPages: pages are unbounded, the second parser is not read.
    expect(estimateSearchCredits({ limit: 10, scrapeOptions: { ...formats, parsers } }).max).toBe(
      2 + 10,
    );
    expect(pdfPagesUnbounded({ categories: ['pdf'], scrapeOptions: { ...formats, parsers } })).toBe(
      true,
    );
    expect(
      pdfPagesUnbounded({
        categories: ['pdf'],
        scrapeOptions: { ...formats, parsers: [...parsers].reverse() },
      }),
    ).toBe(false);
  });

  it('counts a filetype:pdf query as asking for PDFs, unless negated', () => {
    const scrapeOptions = { formats: ['markdown' as const] };
    expect(pdfPagesUnbounded({ query: 'energy filetype:pdf', scrapeOptions })).toBe(true);
    expect(pdfPagesUnbounded({ query: 'FILETYPE:.pdf energy', scrapeOptions })).toBe(true);
    expect(pdfPagesUnbounded({ query: 'energy -filetype:pdf', scrapeOptions })).toBe(false);
    expect(pdfPagesUnbounded({ query: 'energy filetype:pdfx', scrapeOptions })).toBe(false);
    expect(pdfPagesUnbounded({ query: 'energy filetype:pdf' })).toBe(false); // nothing scraped
  });

  it('counts threat protection scanning of every result', () => {
    expect(estimateSearchCredits({ limit: 10, threatProtection: { mode: 'normal' } })).toEqual({
      min: 0,
      max: 2 + 20,
    });
    expect(estimateSearchCredits({ limit: 10, threatProtection: { mode: 'off' } }).max).toBe(2);
  });
});
