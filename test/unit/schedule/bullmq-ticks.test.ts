/**
 * `schedule ls` (src/schedule/times.ts) shows the times BullMQ's job schedulers fire: BullMQ
 * computes each next tick with its `getNextMillis` from the previous one, with the one
 * cron-parser harvest uses (package.json `overrides`; BullMQ's pinned copy skipped the day on
 * which DST starts at midnight, a whole week for a weekly schedule, while `ls` listed it).
 */
import { getNextMillis } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { describeSchedule } from '../../../src/cli/actions/schedule.ts';
import { nextTimes } from '../../../src/schedule/times.ts';

/** The ticks BullMQ fires, one after another, starting after `fromMs`. */
function bullmqTicks(cron: string, tz: string, fromMs: number, count: number): number[] {
  const out: number[] = [];
  let at = fromMs;
  for (let i = 0; i < count; i++) {
    at = getNextMillis(at, { pattern: cron, tz }) as number;
    out.push(at);
  }
  return out;
}

const iso = (ms: number[]) => ms.map((t) => new Date(t).toISOString());

describe('schedule times agree with the ticks BullMQ fires', () => {
  // DST starts at midnight in these zones (midnight does not exist that day).
  const cases = [
    { tz: 'America/Santiago', cron: '0 0 * * *', from: Date.UTC(2026, 8, 3, 12) },
    { tz: 'America/Havana', cron: '0 0 * * *', from: Date.UTC(2026, 2, 5, 12) },
    { tz: 'Asia/Beirut', cron: '30 0 * * *', from: Date.UTC(2026, 2, 26, 12) },
    { tz: 'America/Santiago', cron: '0 0 * * 0', from: Date.UTC(2026, 7, 25, 12) },
  ];
  for (const { tz, cron, from } of cases) {
    it(`${cron} in ${tz}`, () => {
      expect(iso(nextTimes(cron, tz, from, 5))).toEqual(iso(bullmqTicks(cron, tz, from, 5)));
    });
  }

  it('schedule ls lists the Sunday on which DST starts at midnight, and BullMQ fires it', () => {
    const tz = 'America/Santiago';
    const cron = '0 0 * * 0';
    // As `schedule ls` reads it from Redis: BullMQ's queued next tick (Sun 30 Aug 2026).
    const queuedNext = bullmqTicks(cron, tz, Date.UTC(2026, 7, 25, 12), 1)[0] as number;
    const listed = describeSchedule(
      {
        name: 'weekly',
        cron,
        tz,
        hash: 'h',
        next: queuedNext,
        yamlText: undefined,
        file: 'x',
        missed: [],
      },
      null,
      3,
      Date.UTC(2026, 7, 25, 12),
    );
    const fired = bullmqTicks(cron, tz, queuedNext - 1, 3);
    expect(listed.next.map((n) => n.at)).toEqual(iso(fired));
  });
});
