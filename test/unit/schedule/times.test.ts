import { describe, expect, it } from 'vitest';
import { formatInZone, isoInZone, nextTimes, upcomingTimes } from '../../../src/schedule/times.ts';

describe('schedule times', () => {
  it('fire in the schedule time zone, across a daylight saving change', () => {
    // Mondays 06:00 in Berlin: CET (+01:00) until 29 March 2026, then CEST (+02:00).
    const after = Date.UTC(2026, 2, 20);
    const times = nextTimes('0 6 * * 1', 'Europe/Berlin', after, 3);
    expect(times.map((t) => new Date(t).toISOString())).toEqual([
      '2026-03-23T05:00:00.000Z',
      '2026-03-30T04:00:00.000Z',
      '2026-04-06T04:00:00.000Z',
    ]);
    expect(times.map((t) => formatInZone(t, 'Europe/Berlin'))).toEqual([
      'Mon 2026-03-23 06:00:00 +01:00',
      'Mon 2026-03-30 06:00:00 +02:00',
      'Mon 2026-04-06 06:00:00 +02:00',
    ]);
    expect(isoInZone(times[1] as number, 'Europe/Berlin')).toBe('2026-03-30T06:00:00+02:00');
    expect(isoInZone(times[1] as number, 'UTC')).toBe('2026-03-30T04:00:00+00:00');
    expect(formatInZone(times[1] as number, 'America/New_York')).toBe(
      'Mon 2026-03-30 00:00:00 -04:00',
    );
  });

  it('take seconds-level crons, strictly after the given time', () => {
    const after = Date.UTC(2026, 0, 1, 0, 0, 0);
    expect(nextTimes('*/2 * * * * *', 'UTC', after, 3)).toEqual([
      after + 2000,
      after + 4000,
      after + 6000,
    ]);
    expect(nextTimes('*/2 * * * * *', 'UTC', after, 0)).toEqual([]);
  });

  it("start the upcoming ticks from the scheduler's queued one, even when it is overdue", () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const overdue = Date.UTC(2026, 0, 1, 6, 0, 0);
    expect(upcomingTimes('0 6 * * *', 'UTC', overdue, 2, now)).toEqual([
      overdue,
      overdue + 24 * 3600_000,
    ]);
    expect(upcomingTimes('0 6 * * *', 'UTC', null, 1, now)).toEqual([overdue + 24 * 3600_000]);
  });

  it('list one overdue tick, then the times after now: missed ticks start one run', () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 40);
    const overdue = Date.UTC(2026, 0, 1, 12, 0, 0);
    // Every 15 s, 40 s without a worker: one run is due, then the schedule goes on after now.
    expect(upcomingTimes('*/15 * * * * *', 'UTC', overdue, 3, now)).toEqual([
      overdue,
      overdue + 45_000,
      overdue + 60_000,
    ]);
  });
});
