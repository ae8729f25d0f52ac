import { describe, expect, it } from 'vitest';
import { clock, runWith } from '../../../helpers/changes-fixture.ts';
import { useTempStores } from '../helpers.ts';

const stores = useTempStores();

describe('history of results', () => {
  it("lists a URL's rank and content hash in every run, per search", () => {
    const store = stores.open({ now: clock });
    runWith(store, 'r1', {
      us: [
        ['a', 'A'],
        ['b', 'B'],
      ],
      de: [['a', 'A']],
    });
    runWith(store, 'r2', {
      us: [
        ['b', 'B'],
        ['a', 'A2'],
      ],
      de: [],
    });
    const points = store.changes.byUrl('https://x.test/a');
    expect(points.map((p) => [p.runId, p.search, p.position, p.status])).toEqual([
      ['r1', 'energy: solar (country=DE)', 0, 'new'],
      ['r1', 'energy: solar (country=US)', 0, 'new'],
      ['r2', 'energy: solar (country=US)', 1, 'changed'],
    ]);
    expect(points[1]?.contentHash).not.toBe(points[2]?.contentHash);
    expect(store.changes.byUrl('https://x.test/a', { pipelineName: 'other' })).toEqual([]);
  });

  it("lists a query's top results, and the ranks of a search's top results over runs", () => {
    const store = stores.open({ now: clock });
    runWith(store, 'r1', {
      us: [
        ['a', 'A'],
        ['b', 'B'],
        ['c', 'C'],
      ],
      de: [],
    });
    runWith(store, 'r2', {
      us: [
        ['c', 'C'],
        ['a', 'A'],
      ],
      de: [],
    });
    const top = store.changes.byQuery('solar', { top: 2 });
    expect(top.map((p) => `${p.runId} ${p.url.slice(15)} #${p.position + 1}`)).toEqual([
      'r1 a #1',
      'r1 b #2',
      'r2 c #1',
      'r2 a #2',
    ]);
    const key = top[0]!.searchKey;
    expect(store.changes.ranks(['r1', 'r2'], new Set([key]), 10)).toEqual([
      { searchKey: key, url: 'https://x.test/c', positions: [2, 0] },
      { searchKey: key, url: 'https://x.test/a', positions: [0, 1] },
    ]);
  });
});
