import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { clock, runWith } from '../../../helpers/changes-fixture.ts';
import { useTempStores } from '../helpers.ts';

const stores = useTempStores();

const byUrl = (rows: { url: string; status: string; searchKey: string }[], search: string) =>
  Object.fromEntries(rows.filter((r) => r.searchKey === search).map((r) => [r.url.slice(15), r]));

describe('changes of a run', () => {
  it('classifies against the previous completed run, per search, skipping a failed run', () => {
    const store = stores.open({ now: clock });
    runWith(store, 'r1', {
      us: [
        ['a', 'A'],
        ['b', 'B'],
        ['c', 'C'],
      ],
      de: [
        ['a', 'A'],
        ['d', 'D'],
      ],
    });
    runWith(store, 'r2', { us: null, de: null });
    expect(store.runs.get('r2')?.status).toBe('failed');
    runWith(store, 'r3', {
      us: [
        ['b', 'B'],
        ['a', 'A2'],
        ['e', 'E'],
      ],
      de: [
        ['a', 'A'],
        ['d', 'D'],
      ],
    });

    const first = store.changes.recorded('r1');
    expect(first).toMatchObject({ baselineRunId: null, new: 5, results: 5, dropped: 0 });
    const report = store.changes.report('r3', { all: true })!;
    expect(report.baselineRunId).toBe('r1');
    expect(report.totals).toEqual({
      results: 5,
      new: 1,
      same: 3,
      changed: 1,
      dropped: 1,
      movedUp: 1,
      movedDown: 1,
    });
    const [de, us] = report.searches;
    expect(us?.label).toBe('energy: solar (country=US)');
    expect(de?.label).toBe('energy: solar (country=DE)');
    const inUs = byUrl(report.results, us!.searchKey);
    expect(inUs.b).toMatchObject({ status: 'same', position: 0, previousPosition: 1 });
    expect(inUs.a).toMatchObject({ status: 'changed', position: 1, previousPosition: 0 });
    expect(inUs.e).toMatchObject({ status: 'new', position: 2, previousPosition: null });
    expect(inUs.c).toMatchObject({ status: 'dropped', position: null, previousPosition: 2 });
    // The same URL in the other matrix cell compares with that cell: unchanged there.
    const inDe = byUrl(report.results, de!.searchKey);
    expect(inDe.a).toMatchObject({ status: 'same', position: 0, previousPosition: 0 });
    expect(report.searches.map((s) => [s.new, s.changed, s.dropped])).toEqual([
      [0, 0, 0],
      [1, 1, 1],
    ]);
  });

  it('compares with any run when asked (--since-run), a failed one too', () => {
    const store = stores.open({ now: clock });
    runWith(store, 'r1', { us: [['a', 'A']], de: [['d', 'D']] });
    runWith(store, 'r2', {
      us: [
        ['a', 'A'],
        ['b', 'B'],
      ],
      de: null,
    });
    runWith(store, 'r3', { us: [['b', 'B2']], de: [['d', 'D']] });
    const recorded = store.changes.report('r3')!;
    expect(recorded.baselineRunId).toBe('r2');
    // r2 did not answer `de`: its d is new in r3 against r2, not dropped from r2.
    expect(recorded.totals).toMatchObject({ new: 1, changed: 1, dropped: 1 });
    const since = store.changes.report('r3', { sinceRunId: 'r1' })!;
    expect(since.baselineRunId).toBe('r1');
    expect(since.totals).toMatchObject({ new: 1, same: 1, changed: 0, dropped: 1 });
  });

  it('records a run from before against its baseline unrecorded, read from its content', () => {
    const store = stores.open({ now: clock });
    runWith(store, 'r1', { us: [['a', 'A']], de: [] });
    runWith(store, 'r2', { us: [['a', 'A2']], de: [] });
    // As a database from before changes were recorded.
    const db = new Sqlite(store.path);
    db.exec('DELETE FROM change_runs; DELETE FROM result_changes; DELETE FROM dropped_results');
    db.close();
    expect(store.changes.recorded('r1')).toBeUndefined();
    expect(store.changes.report('r2')?.totals.changed).toBe(1);
    expect(store.changes.recorded('r1')).toBeUndefined();
  });

  it('classifies the same against the baseline it remembers as against one read back', () => {
    const answers = [
      {
        us: [
          ['a', 'A'],
          ['b', 'B'],
          ['c', 'C'],
        ],
        de: [['d', 'D']],
      },
      {
        us: [
          ['b', 'B'],
          ['a', 'A2'],
          ['e', 'E'],
        ],
        de: [],
      },
      {
        us: [
          ['e', 'E'],
          ['a', 'A3'],
          ['c', 'C'],
        ],
        de: [['d', 'D2']],
      },
    ];
    // One store records each run against the run it recorded just before; the other opens the
    // file anew before each run, so it reads every baseline back from the database.
    const remembering = stores.open({ now: clock });
    const first = stores.open({ now: clock });
    for (const [i, a] of answers.entries()) runWith(remembering, `r${i}`, a);
    for (const [i, a] of answers.entries()) {
      runWith(stores.reopen(first, { now: clock }), `r${i}`, a);
    }
    const reading = stores.reopen(first, { now: clock });
    for (const runId of ['r1', 'r2']) {
      const { recordedAt: _a, ...remembered } = remembering.changes.recorded(runId)!;
      const { recordedAt: _b, ...readBack } = reading.changes.recorded(runId)!;
      expect(remembered).toEqual(readBack);
      const rows = (store: typeof reading) =>
        store.changes
          .report(runId, { all: true })!
          .results.map(({ url, status, position, previousPosition }) => ({
            url,
            status,
            position,
            previousPosition,
          }));
      expect(rows(remembering)).toEqual(rows(reading));
    }
    expect(remembering.changes.recorded('r2')).toMatchObject({
      new: 2,
      same: 1,
      changed: 1,
      dropped: 1,
    });
  });

  it('does not take a baseline whose results were pruned since from memory', () => {
    const store = stores.open({ now: clock });
    runWith(store, 'r1', {
      us: [
        ['a', 'A'],
        ['b', 'B'],
      ],
      de: [],
    });
    // Another process (harvest prune) removes r1's results: r2 finds nothing of r1's.
    const db = new Sqlite(store.path);
    db.exec("DELETE FROM results WHERE run_id = 'r1'");
    db.close();
    runWith(store, 'r2', { us: [['a', 'A']], de: [] });
    expect(store.changes.recorded('r2')).toMatchObject({ baselineRunId: 'r1', new: 1, same: 0 });
  });
});
