import { describe, expect, it } from 'vitest';
import { sandboxOptionsFromFlags } from '../../../src/cli/commands/sandbox.ts';
import { SearchRequestSchema, withSearchDefaults } from '../../../src/contract/index.ts';
import { UsageError } from '../../../src/errors.ts';
import { resolveOptions } from '../../../src/sandbox/options.ts';
import { generateResults } from '../../../src/sandbox/results.ts';
import { SearchEngine } from '../../../src/sandbox/search.ts';
import { contentRevision, rankedIds } from '../../../src/sandbox/world.ts';
import {
  DEFAULT_EPOCH_SHARES,
  type EpochShares,
  parseEpochShares,
  resolveWorld,
} from '../../../src/sandbox/world-options.ts';

const shares = DEFAULT_EPOCH_SHARES;

const urls = (body: Record<string, unknown>, epoch = 0, seed = 0) => {
  const r = generateResults(withSearchDefaults(SearchRequestSchema.parse(body)), seed, {
    epoch,
    shares,
  });
  return {
    web: (r.web ?? []).map((i) => i.url),
    news: (r.news ?? []).map((i) => i.url),
    images: (r.images ?? []).map((i) => i.url),
  };
};

/** Varied queries: plain, operators, filters, categories, sources with options. */
const QUERIES: Array<Record<string, unknown>> = [
  ...Array.from({ length: 60 }, (_, i) => ({ query: `topic ${i}` })),
  ...Array.from({ length: 20 }, (_, i) => ({
    query: `rust ${i}`,
    sources: ['web', 'news', 'images'],
  })),
  { query: 'rust site:github.com' },
  { query: 'report filetype:pdf -guide' },
  { query: 'intitle:guide async rust' },
  { query: '"exact phrase" search' },
  { query: 'domains', includeDomains: ['example.com', 'docs.example.org'] },
  { query: 'domains', excludeDomains: ['medium.com'] },
  { query: 'neural nets', categories: ['github', 'research'] },
  { query: 'weather', sources: [{ type: 'web', tbs: 'qdr:d', location: 'Germany' }] },
  { query: 'cats larger:1000x700', sources: ['images'] },
];

describe('ranking', () => {
  it('a smaller limit answers the top of the same ranking, for every source', () => {
    let compared = 0;
    for (const body of QUERIES) {
      for (const epoch of [0, 3]) {
        const answers = [1, 5, 10, 37, 100].map((limit) => urls({ ...body, limit }, epoch));
        const full = answers.at(-1)!;
        for (const [i, limit] of [1, 5, 10, 37].entries()) {
          for (const source of ['web', 'news', 'images'] as const) {
            const expected = full[source].slice(0, limit);
            expect(answers[i]![source], `${JSON.stringify(body)} limit ${limit}`).toEqual(expected);
            compared += expected.length;
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(3000);
  });

  it('scrape options, timeout and client fields do not change the ranking', () => {
    for (let i = 0; i < 20; i++) {
      const plain = urls({ query: `same ${i}`, limit: 10 });
      expect(
        urls({
          query: `same ${i}`,
          limit: 7,
          timeout: 5000,
          origin: 'js-sdk@4.42.0',
          scrapeOptions: { formats: ['markdown'] },
        }).web,
      ).toEqual(plain.web.slice(0, 7));
    }
  });

  it('a source ranks the same whether or not other sources are asked for', () => {
    for (let i = 0; i < 20; i++) {
      const alone = urls({ query: `mixed ${i}`, sources: ['news'], limit: 8 });
      const together = urls({ query: `mixed ${i}`, sources: ['web', 'news'], limit: 8 });
      expect(together.news).toEqual(alone.news);
    }
  });

  it('rankings vary in length: most fill the limit, some are short, a few empty', () => {
    const lengths = Array.from({ length: 400 }, (_, i) =>
      urls({ query: `len ${i}`, limit: 10 }),
    ).map((r) => r.web.length);
    const empty = lengths.filter((n) => n === 0).length;
    const short = lengths.filter((n) => n > 0 && n < 10).length;
    expect(empty).toBeGreaterThan(10);
    expect(short).toBeGreaterThan(20);
    expect(lengths.filter((n) => n === 10).length).toBeGreaterThan(250);
  });
});

describe('epochs', () => {
  it('the same epoch, seed and query give the same answer; epoch 0 is the world at the start', () => {
    for (let i = 0; i < 30; i++) {
      const body = { query: `det ${i}`, limit: 20, sources: ['web', 'news'] };
      expect(urls(body, 4)).toEqual(urls(body, 4));
      const request = withSearchDefaults(SearchRequestSchema.parse(body));
      expect(generateResults(request, 0, { epoch: 0, shares })).toEqual(
        generateResults(request, 0),
      );
    }
    expect(rankedIds(7, 10, 0, shares)).toBeUndefined();
    // Worked out from a later, an earlier or no known epoch, a ranking is the same.
    const at37 = [...rankedIds(5, 100, 37, shares)!];
    rankedIds(5, 100, 60, shares);
    expect(rankedIds(5, 100, 37, shares)).toEqual(at37);
    rankedIds(5, 100, 20, shares);
    expect(rankedIds(5, 100, 37, shares)).toEqual(at37);
    expect(rankedIds(5, 100, 37, { ...shares, rank: 0.2 })).not.toEqual(at37);
  });

  it('answers change from one epoch to the next, and differ by seed', () => {
    const body = { query: 'moving', limit: 50 };
    expect(urls(body, 1)).not.toEqual(urls(body, 2));
    expect(urls(body, 2, 1)).not.toEqual(urls(body, 2, 2));
  });

  it('per epoch about `churn` of the results drop out, as many appear, `rank` move', () => {
    let total = 0;
    let dropped = 0;
    let appeared = 0;
    let moved = 0;
    for (let i = 0; i < 100; i++) {
      // Unconstrained queries: every position holds a result, so nothing shifts up.
      const before = urls({ query: `share ${i}`, limit: 100 }, 6).web;
      const after = urls({ query: `share ${i}`, limit: 100 }, 7).web;
      total += before.length;
      const now = new Map(after.map((url, position) => [url, position]));
      before.forEach((url, position) => {
        const p = now.get(url);
        if (p === undefined) dropped++;
        else if (p !== position) moved++;
      });
      const was = new Set(before);
      appeared += after.filter((url) => !was.has(url)).length;
    }
    expect(total).toBeGreaterThan(5000);
    expect(dropped / total).toBeCloseTo(shares.churn, 1);
    expect(Math.abs(dropped / total - shares.churn)).toBeLessThan(0.01);
    expect(appeared).toBe(dropped);
    expect(Math.abs(moved / total - shares.rank)).toBeLessThan(0.01);
  });

  it('the shares are options: none changes nothing, higher ones change more', () => {
    const none: EpochShares = { content: 0, rank: 0, churn: 0 };
    expect(rankedIds(11, 50, 9, none)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    const busy = rankedIds(11, 1000, 1, { content: 0, rank: 0, churn: 0.3 })!;
    const replaced = busy.filter((id) => id >= 1000).length;
    expect(replaced).toBeGreaterThan(250);
    expect(replaced).toBeLessThan(350);
  });

  it('about `content` of the pages change per epoch, and a revision stays until the next', () => {
    let changed = 0;
    const pages = 5000;
    for (let page = 0; page < pages; page++) {
      const seed = (page * 2_654_435_761) >>> 0;
      const before = contentRevision(seed, 9, shares.content);
      const after = contentRevision(seed, 10, shares.content);
      expect(after - before === 0 || after - before === 1).toBe(true);
      if (after !== before) changed++;
      expect(contentRevision(seed, 10, shares.content)).toBe(after);
    }
    expect(Math.abs(changed / pages - shares.content)).toBeLessThan(0.015);
  });

  it('scraped content changes with the page revision only', () => {
    const engine = new SearchEngine(0, resolveWorld({}));
    const body = SearchRequestSchema.parse({
      query: 'content',
      limit: 100,
      scrapeOptions: { formats: ['markdown'] },
    });
    const answer = (epoch: number) =>
      new Map(
        (
          JSON.parse(engine.generate(body, epoch).dataJson!).web as Array<{
            url: string;
            markdown?: string;
          }>
        ).map((d) => [d.url, d.markdown]),
      );
    let same = 0;
    let changed = 0;
    const counts = { both: 0 };
    for (let epoch = 1; epoch <= 10; epoch++) {
      const before = answer(epoch - 1);
      for (const [url, markdown] of answer(epoch)) {
        if (!before.has(url) || markdown === undefined) continue;
        counts.both++;
        if (before.get(url) === markdown) same++;
        else changed++;
      }
    }
    expect(counts.both).toBeGreaterThan(500);
    expect(Math.abs(changed / counts.both - shares.content)).toBeLessThan(0.04);
    expect(same).toBeGreaterThan(changed);
  });
});

describe('world options', () => {
  it('defaults, flags and refusals', () => {
    expect(resolveOptions({}).world).toEqual({
      epoch: 0,
      shares: { content: 0.1, rank: 0.05, churn: 0.05 },
      content: 'short',
    });
    expect(parseEpochShares('content=0.2, churn=0')).toEqual({ content: 0.2, churn: 0 });
    expect(() => parseEpochShares('rank=2')).toThrow(UsageError);
    expect(() => parseEpochShares('moves=0.1')).toThrow(/NAME in content, rank, churn/);
    expect(() => resolveWorld({ epoch: -1 })).toThrow(/epoch must be a whole number/);
    const options = sandboxOptionsFromFlags({
      port: '0',
      host: '127.0.0.1',
      epoch: '4',
      epochShares: 'rank=0.1',
      content: 'corpus',
    });
    expect(options).toMatchObject({ epoch: 4, epochShares: { rank: 0.1 }, content: 'corpus' });
    expect(() =>
      sandboxOptionsFromFlags({ port: '0', host: '127.0.0.1', content: 'long' }),
    ).toThrow(/--content: expected one of short, corpus/);
  });
});
