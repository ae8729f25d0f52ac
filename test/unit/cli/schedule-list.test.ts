import { describe, expect, it } from 'vitest';
import { describeSchedule } from '../../../src/cli/actions/schedule.ts';
import type { TickRow } from '../../../src/store/index.ts';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0); // a Monday
const YAML = 'name: weekly\nschedule:\n  cron: "0 6 * * 1"\n  notify: https://hooks.example/h\n';

const info = (next: number | null, missed: number[] = []) => ({
  name: 'weekly',
  cron: '0 6 * * 1',
  tz: 'Europe/Berlin',
  hash: 'a'.repeat(64),
  next,
  yamlText: YAML,
  file: '/srv/pipelines/weekly.yaml',
  missed,
});

describe('schedule ls', () => {
  it('shows the next times on the schedule clock, its webhook and its last tick', () => {
    const next = Date.UTC(2026, 10, 30, 5, 0, 0);
    const last: TickRow = {
      pipelineName: 'weekly',
      dueAt: Date.UTC(2026, 10, 23, 5, 0, 0),
      takenAt: Date.UTC(2026, 10, 23, 5, 0, 0),
      pipelineHash: 'a'.repeat(64),
      outcome: 'skipped',
      runId: '20261116T050000-ab12',
      reason: 'the previous run 20261116T050000-ab12 is still running',
      updatedAt: 0,
    };
    const d = describeSchedule(info(next), last, 3, NOW);
    expect(d.lines).toEqual([
      'weekly  0 6 * * 1  Europe/Berlin  /srv/pipelines/weekly.yaml',
      '  next  Mon 2026-11-30 06:00:00 +01:00',
      '        Mon 2026-12-07 06:00:00 +01:00',
      '        Mon 2026-12-14 06:00:00 +01:00',
      '  notify https://hooks.example/h',
      '  last  Mon 2026-11-23 06:00:00 +01:00  skipped: the previous run 20261116T050000-ab12 is still running',
    ]);
    expect(d.next[0]).toEqual({
      at: '2026-11-30T05:00:00.000Z',
      local: '2026-11-30T06:00:00+01:00',
    });
    expect(d.notify).toBe('https://hooks.example/h');
  });

  it('says when the queued tick is overdue because no worker takes it', () => {
    const overdue = Date.UTC(2026, 10, 23, 5, 0, 0);
    const d = describeSchedule(info(overdue), null, 2, NOW);
    expect(d.lines[1]).toBe(
      '  next  Mon 2026-11-23 06:00:00 +01:00  (due: no worker with the runs role has taken it yet)',
    );
    expect(d.lines[2]).toBe('        Mon 2026-11-30 06:00:00 +01:00');
  });

  it('lists first, as due, a missed tick a re-apply kept waiting for a worker', () => {
    const missed = Date.UTC(2026, 10, 23, 5, 0, 0);
    const next = Date.UTC(2026, 10, 30, 5, 0, 0);
    const d = describeSchedule(info(next, [missed]), null, 2, NOW);
    expect(d.lines.slice(1, 3)).toEqual([
      '  next  Mon 2026-11-23 06:00:00 +01:00  (due: no worker with the runs role has taken it yet)',
      '        Mon 2026-11-30 06:00:00 +01:00',
    ]);
  });
});
