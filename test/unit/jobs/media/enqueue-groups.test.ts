import { describe, expect, it } from 'vitest';
import { groupMediaRows } from '../../../../jobs/media/enqueue.ts';

const rows = (...deadlines: number[]) =>
  deadlines.map((deadlineAt, i) => ({ id: i + 1, deadlineAt }));
const ids = (groups: Array<Array<{ id: number }>>) => groups.map((g) => g.map((r) => r.id));

describe('media job groups', () => {
  it('keeps consecutive rows together up to the row limit', () => {
    expect(ids(groupMediaRows(rows(0, 0, 0, 0, 0), 2, 1000))).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('starts a new job where a deadline lies beyond the span from the first row', () => {
    expect(ids(groupMediaRows(rows(0, 400, 1000, 1001, 1500, 2100), 8, 1000))).toEqual([
      [1, 2, 3],
      [4, 5],
      [6],
    ]);
  });

  it('makes no job of no rows', () => {
    expect(groupMediaRows([])).toEqual([]);
  });
});
