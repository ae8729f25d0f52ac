import { defaultRepeatStrategy } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import {
  formatInZone,
  isoInZone,
  matchByHand,
  nextFire,
  nextTimes,
  scheduleRepeatStrategy,
  upcomingTimes,
} from '../../../src/schedule/times.ts';

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

describe('schedule times where cron-parser cannot cross a change of the clocks', () => {
  // Lord Howe Island's clocks go back 30 minutes at 02:00 on Sunday 4 April 2027 (+11:00 to
  // +10:30): for the day before, cron-parser throws on a cron on the hour.
  const tz = 'Australia/Lord_Howe';
  const failing = Date.UTC(2027, 3, 2, 15, 0, 1);
  const local = (times: number[]) => times.map((t) => formatInZone(t, tz));

  it('cron-parser alone throws there (what the fallback is for)', () => {
    const expr = CronExpressionParser.parse('0 2 * * *', { tz, currentDate: failing });
    expect(() => expr.next()).toThrow(/loop limit/);
  });

  it('a daily cron on the hour goes on across the change', () => {
    const times = nextTimes('0 2 * * *', tz, Date.UTC(2027, 3, 1), 4);
    expect(local(times)).toEqual([
      'Fri 2027-04-02 02:00:00 +11:00',
      'Sat 2027-04-03 02:00:00 +11:00',
      'Sun 2027-04-04 02:00:00 +10:30',
      'Mon 2027-04-05 02:00:00 +10:30',
    ]);
    // Weekly on Sundays too: cron-parser throws for the whole week before.
    expect(local(nextTimes('0 2 * * 0', tz, Date.UTC(2027, 2, 28, 15, 0, 1), 2))).toEqual([
      'Sun 2027-04-04 02:00:00 +10:30',
      'Sun 2027-04-11 02:00:00 +10:30',
    ]);
    expect(local(nextTimes('0 9 * * *', tz, Date.UTC(2027, 3, 2, 22, 0, 1), 2))).toEqual([
      'Sun 2027-04-04 09:00:00 +10:30',
      'Mon 2027-04-05 09:00:00 +10:30',
    ]);
  });

  it('a cron on the first Sunday of the month goes on across the change (cron-parser throws for five weeks)', () => {
    const after = Date.UTC(2026, 2, 1, 0); // Sunday 1 March 2026, 11:00 +11:00
    expect(() =>
      CronExpressionParser.parse('0 9 * * 0#1', { tz, currentDate: after }).next(),
    ).toThrow(/loop limit/);
    // 5 April 09:00 +10:30 (the clocks went back at 02:00 that morning), then 3 May.
    expect(nextTimes('0 9 * * 0#1', tz, after, 2)).toEqual([
      Date.UTC(2026, 3, 4, 22, 30),
      Date.UTC(2026, 4, 2, 22, 30),
    ]);
    expect(scheduleRepeatStrategy(after, { pattern: '0 9 * * 0#1', tz })).toBe(
      Date.UTC(2026, 3, 4, 22, 30),
    );
  });

  it('a wall time the clocks repeat fires once', () => {
    // 01:15 comes twice on 4 April (at +11:00, then at +10:30): the first only.
    const times = nextTimes('15 1 * * *', tz, Date.UTC(2027, 3, 2, 15), 3);
    expect(times.map((t) => new Date(t).toISOString())).toEqual([
      '2027-04-03T14:15:00.000Z',
      '2027-04-04T14:45:00.000Z',
      '2027-04-05T14:45:00.000Z',
    ]);
  });

  it("is BullMQ's repeat strategy, with a next tick where BullMQ's own has none", () => {
    const opts = { pattern: '0 2 * * *', tz };
    expect(defaultRepeatStrategy(failing, opts)).toBeUndefined();
    expect(scheduleRepeatStrategy(failing, opts)).toBe(Date.UTC(2027, 3, 3, 15, 30));
    // startDate and endDate as BullMQ reads them.
    const start = Date.UTC(2027, 3, 10);
    expect(scheduleRepeatStrategy(failing, { ...opts, startDate: start })).toBe(
      nextFire('0 2 * * *', tz, start),
    );
    expect(scheduleRepeatStrategy(failing, { ...opts, endDate: Date.UTC(2027, 3, 3) })).toBe(
      undefined,
    );
  });

  it('matches by hand what cron-parser answers, away from changes of the clocks', () => {
    const zones = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', tz];
    const crons = ['0 2 * * *', '*/7 * * * *', '30 4 1 * *', '0 0 * * 0', '15 10 * * 1-5'];
    const crons6 = ['*/20 15 9 * * *', '0 0 9 L * *', '0 30 8 * * 1#2'];
    let t = Date.UTC(2026, 0, 1);
    let compared = 0;
    for (let i = 0; i < 240; i++) {
      const zone = zones[i % zones.length] as string;
      const cron = [...crons, ...crons6][i % (crons.length + crons6.length)] as string;
      t += 29 * 3_600_000 + 7 * 60_000 + 11_000;
      let expected: number;
      try {
        expected = CronExpressionParser.parse(cron, { tz: zone, currentDate: t }).next().getTime();
      } catch {
        continue;
      }
      const offsets = new Set(
        [t, expected - 86_400_000, expected + 86_400_000].map((ms) =>
          formatInZone(ms, zone).slice(-6),
        ),
      );
      if (offsets.size > 1) continue; // a change of the clocks in between: the two differ there
      expect(matchByHand(cron, zone, t), `${cron} in ${zone} after ${t}`).toBe(expected);
      compared += 1;
    }
    expect(compared).toBeGreaterThan(150);
  });

  it('agrees with cron-parser wherever cron-parser answers', () => {
    const zones = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', tz];
    const crons = ['0 2 * * *', '*/7 * * * *', '30 4 1 * *', '0 0 * * 0', '15 10 * * 1-5'];
    let t = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 200; i++) {
      const zone = zones[i % zones.length] as string;
      const cron = crons[i % crons.length] as string;
      t += 17 * 3_600_000 + 7 * 60_000 + 11_000;
      let expected: number | undefined;
      try {
        expected = CronExpressionParser.parse(cron, { tz: zone, currentDate: t }).next().getTime();
      } catch {
        continue;
      }
      expect(nextFire(cron, zone, t)).toBe(expected);
    }
  });
});
