import { describe, expect, it } from 'vitest';
import {
  buildExportQuery,
  EXPORT_COLUMNS,
  type ExportFilter,
  type Store,
} from '../../../../src/store/index.ts';
import { clock, runWith } from '../../../helpers/changes-fixture.ts';
import { useTempStores } from '../helpers.ts';

const stores = useTempStores();

function rows(store: Store, filter: ExportFilter, names: string[]) {
  const columns = EXPORT_COLUMNS[filter.kind].filter((c) => names.includes(c.name));
  const query = buildExportQuery(columns, filter);
  return [...store.exports.iterate(query)].map((row) =>
    Object.fromEntries(columns.map((c, i) => [c.name, row[i]])),
  );
}

describe('exports of changes', () => {
  it('--of changes lists every result of a run and what its searches dropped', () => {
    const store = stores.open({ now: clock });
    runWith(store, 'r1', {
      us: [
        ['a', 'A'],
        ['b', 'B'],
      ],
      de: [],
    });
    runWith(store, 'r2', {
      us: [
        ['b', 'B2'],
        ['c', 'C'],
      ],
      de: [],
    });
    const changes = rows(store, { kind: 'changes', runId: 'r2' }, [
      'run_id',
      'baseline_run_id',
      'query',
      'status',
      'position',
      'previous_position',
      'url',
      'title',
    ]);
    expect(changes).toEqual([
      {
        run_id: 'r2',
        baseline_run_id: 'r1',
        query: 'solar',
        status: 'changed',
        position: 0,
        previous_position: 1,
        url: 'https://x.test/b',
        title: 'b',
      },
      expect.objectContaining({ status: 'new', position: 1, previous_position: null }),
      expect.objectContaining({
        status: 'dropped',
        position: null,
        previous_position: 0,
        url: 'https://x.test/a',
        title: 'a',
        query: 'solar',
      }),
    ]);
  });

  it('--only-changed keeps new and changed results; results carry their history columns', () => {
    const store = stores.open({ now: clock });
    runWith(store, 'r1', {
      us: [
        ['a', 'A'],
        ['b', 'B'],
      ],
      de: [],
    });
    runWith(store, 'r2', {
      us: [
        ['b', 'B'],
        ['a', 'A2'],
        ['c', 'C'],
      ],
      de: [],
    });
    const names = ['url', 'previous_position', 'last_changed_run'];
    expect(rows(store, { kind: 'results', runId: 'r2', onlyChanged: true }, names)).toEqual([
      { url: 'https://x.test/a', previous_position: 0, last_changed_run: 'r2' },
      { url: 'https://x.test/c', previous_position: null, last_changed_run: 'r2' },
    ]);
    expect(rows(store, { kind: 'results', runId: 'r2' }, names)[0]).toEqual({
      url: 'https://x.test/b',
      previous_position: 1,
      last_changed_run: 'r1',
    });
  });
});
