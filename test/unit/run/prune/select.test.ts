import { describe, expect, it } from 'vitest';
import { describeRule, selectRuns } from '../../../../src/run/prune/select.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 11, 6);
/** Newest first, one a day: r0 today, r1 yesterday, ... */
const runs = ['completed', 'running', 'completed', 'failed', 'interrupted', 'cancelled'].map(
  (status, i) => ({ runId: `r${i}`, status, createdAt: NOW - i * DAY - 1 }),
);

describe('selectRuns', () => {
  it('keepRuns keeps the newest N whatever their status, and prunes only finished ones beyond', () => {
    const s = selectRuns(runs, { keepRuns: 2 }, NOW);
    expect(s.kept).toBe(2);
    expect(s.prune.map((r) => r.runId)).toEqual(['r2', 'r3', 'r5']);
    expect(s.skipped).toEqual([
      { runId: 'r4', status: 'interrupted', reason: 'not finished (interrupted)' },
    ]);
  });

  it('olderThanMs prunes runs created before the cutoff; a running one is never pruned', () => {
    const s = selectRuns(runs, { olderThanMs: 0.5 * DAY }, NOW);
    expect(s.kept).toBe(1);
    expect(s.prune.map((r) => r.runId)).toEqual(['r2', 'r3', 'r5']);
    expect(s.skipped.map((r) => r.runId)).toEqual(['r1', 'r4']);
    expect(selectRuns(runs, { olderThanMs: 30 * DAY }, NOW)).toMatchObject({ prune: [], kept: 6 });
  });

  it('keeping more runs than there are prunes nothing', () => {
    expect(selectRuns(runs, { keepRuns: 10 }, NOW)).toEqual({ prune: [], skipped: [], kept: 6 });
  });

  it('says the rule', () => {
    expect(describeRule({ keepRuns: 1 })).toBe('keep the 1 most recent run');
    expect(describeRule({ olderThanMs: 30 * DAY }, '30d')).toBe('runs older than 30d');
  });
});
