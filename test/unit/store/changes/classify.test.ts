import { describe, expect, it } from 'vitest';
import { classify, type Observation } from '../../../../src/store/changes/classify.ts';
import { contentHash } from '../../../../src/store/changes/content-hash.ts';
import { searchKey, searchLabel } from '../../../../src/store/changes/search-key.ts';

const obs = (url: string, position: number, hash: string, search = 's1'): Observation => ({
  taskKey: `t-${search}`,
  source: 'web',
  position,
  url,
  searchKey: search,
  contentHash: hash,
});

describe('classify', () => {
  it('finds new, same, changed, dropped and moves', () => {
    const before = [obs('a', 0, 'h1'), obs('b', 1, 'h2'), obs('c', 2, 'h3')].map((o) => ({
      ...o,
      lastChangedRun: 'r0',
    }));
    const now = [obs('b', 0, 'h2'), obs('a', 1, 'hX'), obs('d', 2, 'h4')];
    const c = classify('r1', now, before, new Set(['s1']));
    expect(c.counts).toEqual({
      results: 3,
      new: 1,
      same: 1,
      changed: 1,
      dropped: 1,
      movedUp: 1,
      movedDown: 1,
    });
    expect(c.results.map((r) => [r.status, r.previousPosition, r.lastChangedRun])).toEqual([
      ['same', 1, 'r0'],
      ['changed', 0, 'r1'],
      ['new', null, 'r1'],
    ]);
    expect(c.dropped).toEqual([
      expect.objectContaining({ url: 'c', previousPosition: 2, previousHash: 'h3' }),
    ]);
  });

  it('drops nothing from a search this run did not answer, and counts a URL once', () => {
    const before = [obs('a', 0, 'h1', 's2')].map((o) => ({ ...o, lastChangedRun: null }));
    const c = classify('r1', [obs('x', 0, 'h'), obs('x', 3, 'h')], before, new Set(['s1']));
    expect(c.counts).toMatchObject({ results: 1, new: 1, dropped: 0 });
    expect(c.results[0]?.position).toBe(0);
  });
});

describe('contentHash', () => {
  const of = (item: Record<string, unknown>) => contentHash(item);

  it('hashes the scraped content, not the listing nor signed URLs nor metadata', () => {
    const base = { markdown: '# a', links: ['x'], title: 'T', screenshot: 'https://s/1' };
    expect(of(base)).toMatch(/^[0-9a-f]{16}$/);
    expect(of({ ...base, title: 'T2', screenshot: 'https://s/2', metadata: { a: 1 } })).toBe(
      of(base),
    );
    expect(of({ ...base, markdown: '# b' })).not.toBe(of(base));
    expect(of({ ...base, json: { b: 1, a: 2 } })).toBe(of({ ...base, json: { a: 2, b: 1 } }));
  });

  it('takes a stored value by its stored hash: the same text, the same hash either way', () => {
    const stored = { markdown: Buffer.alloc(16, 1) };
    const item = { markdown: '# a' };
    expect(contentHash(item, stored)).toBe(contentHash({ markdown: '# other' }, stored));
    expect(contentHash(item, stored)).not.toBe(
      contentHash(item, { markdown: Buffer.alloc(16, 2) }),
    );
  });

  it('falls back to the listing when nothing was scraped', () => {
    expect(of({ title: 'A' })).not.toBe(of({ title: 'B' }));
  });
});

describe('searchKey', () => {
  it('ignores scrape options and timeout, not the matrix fields', () => {
    const us = JSON.stringify({ query: 'q', country: 'US', scrapeOptions: { formats: [] } });
    const us2 = JSON.stringify({ country: 'US', query: 'q', timeout: 5 });
    const de = JSON.stringify({ query: 'q', country: 'DE' });
    expect(searchKey(us, null)).toBe(searchKey(us2, null));
    expect(searchKey(us, null)).not.toBe(searchKey(de, null));
    expect(searchKey(us, 'e1')).not.toBe(searchKey(us, null));
    expect(searchLabel(de, 'e1')).toBe('e1: q (country=DE)');
  });
});
