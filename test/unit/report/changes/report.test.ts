import { describe, expect, it } from 'vitest';
import { changeLists } from '../../../../src/notify/payload.ts';
import { buildChangeReport } from '../../../../src/report/changes/build.ts';
import { renderChangeReport } from '../../../../src/report/changes/run-report.ts';
import { clock, runWith } from '../../../helpers/changes-fixture.ts';
import { useTempStores } from '../../store/helpers.ts';

const stores = useTempStores();

function twoRuns() {
  const store = stores.open({ now: clock });
  runWith(store, 'r1', {
    us: [
      ['a', 'line 1\nline 2\n'],
      ['b', 'B'],
      ['c', 'C'],
    ],
    de: [['a', 'A']],
  });
  runWith(store, 'r2', {
    us: [
      ['b', 'B'],
      ['a', 'line 1\nline two\n'],
      ['d', 'D'],
    ],
    de: [['a', 'A']],
  });
  return store;
}

describe('harvest changes', () => {
  it('counts per search and in total, with credits per new and changed result', () => {
    const store = twoRuns();
    const report = buildChangeReport(store, { pipelineName: 'watch' });
    expect(report.run.id).toBe('r2');
    expect(report.baseline?.id).toBe('r1');
    expect(report.totals).toMatchObject({ new: 1, same: 2, changed: 1, dropped: 1, movedUp: 1 });
    expect(
      report.results.map((r) => [r.status, r.url.slice(15), r.rank, r.previousRank, r.moved]),
    ).toEqual([
      ['same', 'b', 1, 2, 1],
      ['changed', 'a', 2, 1, -1],
      ['new', 'd', 3, null, null],
      ['dropped', 'c', null, 3, null],
    ]);
  });

  it('writes a table with the lists, and a markdown diff with --detail', () => {
    const store = twoRuns();
    const text = renderChangeReport(store, { runId: 'r2', format: 'table', detail: true });
    expect(text).toContain('changes in run r2 (watch, completed');
    expect(text).toMatch(/^total\s+4\s+1\s+2\s+1\s+1\s+1\s+1\s+0/m);
    expect(text).toContain('[energy: solar (country=US)] #2 (was #1, ↓1)  a  https://x.test/a');
    expect(text).toContain('[energy: solar (country=US)] #1 (was #2, ↑1)  b  https://x.test/b');
    expect(text).toContain('    -line 2');
    expect(text).toContain('    +line two');
  });

  it('writes CSV and JSON', () => {
    const store = twoRuns();
    const csv = renderChangeReport(store, { runId: 'r2', format: 'csv' }).split('\r\n');
    expect(csv[0]).toBe(
      'run_id,baseline_run_id,search,search_key,source,status,rank,previous_rank,moved,url,title,content_hash,previous_hash',
    );
    expect(csv).toHaveLength(6);
    const json = JSON.parse(renderChangeReport(store, { runId: 'r2', format: 'json' }));
    expect(json.searches).toHaveLength(2);
  });

  it('refuses an unknown run, and a --since-run of another pipeline', () => {
    const store = twoRuns();
    expect(() => buildChangeReport(store, { runId: 'nope' })).toThrow(/no run nope/);
    expect(() => buildChangeReport(store, { runId: 'r2', sinceRunId: 'nope' })).toThrow(
      /no run nope/,
    );
  });

  it('gives a webhook the counts and capped lists', () => {
    const store = twoRuns();
    const lists = changeLists(store, 'r2', 1);
    expect(lists).toMatchObject({
      baselineRunId: 'r1',
      counts: { new: 1, same: 2, changed: 1, dropped: 1, movedUp: 1, movedDown: 1 },
      new: [{ url: 'https://x.test/d', rank: 3, previousRank: null }],
      dropped: [{ url: 'https://x.test/c', rank: null, previousRank: 3 }],
      changed: [{ url: 'https://x.test/a' }],
      truncated: true,
    });
    expect(lists?.moved).toHaveLength(1);
  });
});
