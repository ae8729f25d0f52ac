import { describe, expect, it } from 'vitest';
import {
  estimateSearchCredits,
  SearchRequestSchema,
  SearchResponseSchema,
  searchCredits,
  withSearchDefaults,
} from '../../../src/contract/index.ts';
import { parseQuery, satisfies } from '../../../src/sandbox/query.ts';
import { generateResults, totalResults } from '../../../src/sandbox/results.ts';
import { app, search } from './helpers.ts';

const gen = (body: unknown, seed = 0) =>
  generateResults(withSearchDefaults(SearchRequestSchema.parse(body)), seed);

describe('deterministic results', () => {
  it('same query and options give the same results; another seed differs', () => {
    const body = { query: 'solar panels', limit: 7, sources: ['web', 'news', 'images'] };
    expect(gen(body)).toEqual(gen(body));
    expect(JSON.stringify(gen(body, 1))).not.toBe(JSON.stringify(gen(body)));
  });

  it('two answers to one request differ only in id', async () => {
    const sandbox = app();
    const a = (await search(sandbox, { query: 'same' })).json();
    const b = (await search(sandbox, { query: 'same' })).json();
    expect(a.id).not.toBe(b.id);
    expect({ ...a, id: '' }).toEqual({ ...b, id: '' });
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(SearchResponseSchema.safeParse(a).success).toBe(true);
    await sandbox.close();
  });

  it('honours limit per source, and counts vary by query (some fewer, a few none)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 200; i++) {
      const r = gen({ query: `topic ${i}`, limit: 5, sources: ['web', 'news', 'images'] });
      for (const key of ['web', 'news', 'images'] as const)
        expect(r[key]?.length ?? 0).toBeLessThanOrEqual(5);
      const n = totalResults(r);
      counts.set(
        n === 0 ? 'none' : n < 15 ? 'fewer' : 'full',
        (counts.get(n === 0 ? 'none' : n < 15 ? 'fewer' : 'full') ?? 0) + 1,
      );
    }
    expect(counts.get('none')).toBeGreaterThan(0);
    expect(counts.get('fewer')).toBeGreaterThan(0);
    expect(counts.get('full')).toBeGreaterThan(counts.get('none')!);
  });

  it('data holds keys only for requested sources with results', () => {
    const r = gen({ query: 'only web', sources: [{ type: 'web' }] });
    expect(Object.keys(r).every((k) => k === 'web')).toBe(true);
    const empty = Array.from({ length: 200 }, (_, i) => gen({ query: `q${i}` })).find(
      (x) => totalResults(x) === 0,
    );
    expect(empty).toEqual({});
  });

  it('each result carries its category when categories are requested', () => {
    const web = [1, 2, 3, 4].flatMap(
      (seed) =>
        gen(
          {
            query: 'graph databases',
            limit: 10,
            categories: [{ type: 'github' }, { type: 'research' }],
          },
          seed,
        ).web ?? [],
    );
    expect(web.length).toBeGreaterThan(0);
    for (const item of web) expect(['github', 'research']).toContain(item.category);
    expect(
      web
        .filter((i) => i.category === 'github')
        .every((i) => i.url.startsWith('https://github.com/')),
    ).toBe(true);
  });

  it('include and exclude domains', () => {
    for (let i = 0; i < 20; i++) {
      const inc = gen({
        query: `kubernetes ${i}`,
        includeDomains: ['kubernetes.io', 'example.org'],
      });
      for (const item of inc.web ?? [])
        expect(new URL(item.url).hostname).toMatch(/(^|\.)(kubernetes\.io|example\.org)$/);
      const exc = gen({ query: `kubernetes ${i}`, excludeDomains: ['medium.com', 'example.com'] });
      for (const item of exc.web ?? [])
        expect(new URL(item.url).hostname).not.toMatch(/(^|\.)(medium|example)\.com$/);
    }
  });

  it('results satisfy site:, -site:, filetype:, inurl:, intitle:, quoted phrases and -word', () => {
    const queries = [
      'site:nodejs.org streams',
      'streams -site:medium.com -site:dev.to',
      'annual report filetype:pdf',
      'inurl:pricing saas',
      'intitle:benchmark postgres',
      '"exact phrase here" search',
      'allintitle: fast json parser',
      'rust -python',
      'climate filetype:pdf site:example.org inurl:2024 intitle:report "sea level"',
    ];
    for (const query of queries) {
      const c = parseQuery(query);
      let found = 0;
      for (let i = 0; i < 10; i++) {
        const r = gen({ query, limit: 10, sources: ['web', 'news'] }, i);
        for (const item of r.web ?? []) {
          expect(
            satisfies({ url: item.url, title: item.title, text: item.description }, c, {}),
            `${query}: ${item.url}`,
          ).toBe(true);
          found++;
        }
        for (const item of r.news ?? []) {
          expect(satisfies({ url: item.url, title: item.title, text: item.snippet }, c, {})).toBe(
            true,
          );
        }
      }
      expect(found, query).toBeGreaterThan(0);
    }
    const pdf = gen({ query: 'annual report filetype:pdf', limit: 10 }, 3);
    for (const item of pdf.web ?? []) expect(item.url).toMatch(/\.pdf$/);
    const phrase = gen({ query: '"sea level rise" data' }, 2);
    for (const item of phrase.web ?? [])
      expect(`${item.title} ${item.description}`).toContain('sea level rise');
  });

  it('imagesize: and larger: constrain image dimensions', () => {
    for (let i = 0; i < 10; i++) {
      for (const img of gen({ query: `cats imagesize:300x200`, sources: ['images'] }, i).images ??
        []) {
        expect([img.imageWidth, img.imageHeight]).toEqual([300, 200]);
      }
      for (const img of gen({ query: `cats larger:1600x900`, sources: ['images'] }, i).images ??
        []) {
        expect(img.imageWidth).toBeGreaterThan(1600);
        expect(img.imageHeight).toBeGreaterThan(900);
      }
    }
  });
});

describe('credits', () => {
  it('creditsUsed equals the contract function and the sum of per-document credits', async () => {
    const sandbox = app();
    const bodies = [
      { query: 'plain', limit: 25, sources: ['web', 'news', 'images'] },
      { query: 'zdr', enterprise: ['zdr'], limit: 15 },
      {
        query: 'scrape filetype:pdf',
        limit: 10,
        scrapeOptions: {
          formats: [
            'markdown',
            { type: 'json', schema: { type: 'object', properties: { n: { type: 'integer' } } } },
          ],
        },
      },
      {
        query: 'question',
        limit: 10,
        sources: ['web', 'news'],
        scrapeOptions: {
          formats: [
            { type: 'question', question: 'why?' },
            { type: 'highlights', query: 'x' },
          ],
          redactPII: true,
        },
      },
      {
        query: 'pdf capped filetype:pdf',
        limit: 10,
        scrapeOptions: { formats: ['markdown'], parsers: [{ type: 'pdf', maxPages: 3 }] },
      },
    ];
    for (const body of bodies) {
      for (let i = 0; i < 5; i++) {
        const b = { ...body, query: `${body.query} ${i}` };
        const res = (await search(sandbox, b)).json();
        const docs = [...(res.data.web ?? []), ...(res.data.news ?? [])];
        const total = docs.length + (res.data.images?.length ?? 0);
        const ok = docs.filter((d) => d.metadata?.statusCode === 200);
        const request = SearchRequestSchema.parse(b);
        const expected = searchCredits(request, {
          totalResults: total,
          scrapedOk: ok.length,
          pdfPagesByDoc: ok.map((d) => d.metadata.numPages ?? 1),
        });
        expect(res.creditsUsed).toBe(expected);
        if (b.scrapeOptions && total > 0) {
          const perDoc = docs.reduce((s, d) => s + (d.metadata?.creditsUsed ?? 0), 0);
          const searchPart = searchCredits(
            { ...request, scrapeOptions: undefined },
            { totalResults: total, scrapedOk: 0 },
          );
          expect(res.creditsUsed).toBe(searchPart + perDoc);
        }
      }
    }
    await sandbox.close();
  });

  it("never bills a search more than its estimate's max when a pdf parser bounds the pages", async () => {
    const sandbox = app();
    for (const query of ['firecrawl', 'annual report', 'pdf manual', 'white paper', 'spec']) {
      const request = SearchRequestSchema.parse({
        query,
        limit: 10,
        categories: ['pdf'],
        scrapeOptions: { formats: ['markdown'], parsers: [{ type: 'pdf', maxPages: 4 }] },
      });
      const res = await search(sandbox, request);
      expect(res.status).toBe(200);
      const body = res.json() as { creditsUsed: number };
      expect(body.creditsUsed).toBeLessThanOrEqual(estimateSearchCredits(request).max);
    }
  });

  it('failed scrapes show statusCode 500 and an error and cost 0', async () => {
    const sandbox = app();
    let failed = 0;
    for (let i = 0; i < 30 && failed === 0; i++) {
      const res = (
        await search(sandbox, {
          query: `fail ${i}`,
          limit: 20,
          scrapeOptions: { formats: ['markdown'] },
        })
      ).json();
      for (const d of res.data.web ?? []) {
        if (d.metadata.statusCode === 500) {
          failed++;
          expect(d.metadata.error).toEqual(expect.any(String));
          expect(d.metadata.creditsUsed).toBe(0);
          expect(d.markdown).toBeUndefined();
        }
      }
    }
    expect(failed).toBeGreaterThan(0);
    await sandbox.close();
  });

  it('threat protection normal adds 2 credits per URL', async () => {
    const sandbox = app({ threatProtectionTeams: ['sandbox'] });
    const res = (
      await search(sandbox, { query: 'tp scan', limit: 10, threatProtection: { mode: 'normal' } })
    ).json();
    const n = res.data.web?.length ?? 0;
    expect(res.creditsUsed).toBe(n === 0 ? 0 : 2 + 2 * n);
    await sandbox.close();
  });

  it('lowers limit to fit the remaining credits when limit was sent; 402 when it was not', async () => {
    const sandbox = app({ keys: [{ key: 'k', team: 't', credits: 12 }] });
    const auth = { authorization: 'Bearer k' };
    const body = { query: 'lowered', limit: 50, scrapeOptions: { formats: ['markdown'] } };
    const res = await search(sandbox, body, auth);
    expect(res.status).toBe(200);
    const json = res.json();
    expect(json.data.web?.length ?? 0).toBeLessThanOrEqual(10); // 2 + 10 * 1 <= 12
    expect(json.warning).toMatch(/limit lowered from 50 to 10/);
    const noLimit = await search(
      sandbox,
      { query: 'x', scrapeOptions: { formats: ['markdown'] } },
      auth,
    );
    expect(noLimit.status).toBe(json.creditsUsed > 0 ? 402 : 200);
    const ledger = sandbox.sandbox.ledger();
    expect(ledger.teams.t?.creditsCharged).toBe(json.creditsUsed);
    expect(ledger.teams.t?.creditsRemaining.k).toBe(12 - json.creditsUsed);
    await sandbox.close();
  });
});

describe('scrape formats', () => {
  it('each scraped web and news result carries the requested fields', async () => {
    const sandbox = app();
    const formats = [
      'markdown',
      'html',
      'rawHtml',
      'links',
      'summary',
      'images',
      'screenshot',
      'audio',
      'video',
      {
        type: 'json',
        schema: {
          type: 'object',
          properties: {
            name: { type: 'string' },
            tags: { type: 'array', items: { type: 'string' } },
            ok: { type: 'boolean' },
          },
          required: ['name'],
        },
      },
      { type: 'question', question: 'What is it?' },
      { type: 'highlights', query: 'key points' },
    ];
    const res = (
      await search(sandbox, {
        query: 'formats test',
        limit: 5,
        sources: ['web', 'news'],
        scrapeOptions: { formats },
      })
    ).json();
    const docs = [...(res.data.web ?? []), ...(res.data.news ?? [])].filter(
      (d) => d.metadata.statusCode === 200,
    );
    expect(docs.length).toBeGreaterThan(0);
    for (const d of docs) {
      for (const f of ['markdown', 'html', 'rawHtml', 'summary', 'answer'])
        expect(typeof d[f]).toBe('string');
      expect(Array.isArray(d.links) && Array.isArray(d.images) && Array.isArray(d.highlights)).toBe(
        true,
      );
      expect(d.json).toEqual({
        name: expect.any(String),
        tags: expect.any(Array),
        ok: expect.any(Boolean),
      });
      for (const f of ['screenshot', 'audio', 'video'])
        expect(d[f]).toMatch(
          /^http:\/\/localhost(:\d+)?\/media\/[0-9a-f]{32}\.(png|mp3|mp4)\?X-Goog-Algorithm=GOOG4-HMAC-SHA256&/,
        );
      expect(d.metadata).toMatchObject({
        title: expect.any(String),
        description: expect.any(String),
        sourceURL: d.url,
        url: d.url,
        statusCode: 200,
        creditsUsed: 13,
      });
    }
    await sandbox.close();
  });
});
