/**
 * When a schedule fires, and how such a time reads in the schedule's own time zone. Pure; uses
 * cron-parser, as BullMQ's job schedulers do, so the times shown are the times they fire.
 */
import { CronExpressionParser } from 'cron-parser';

/** The time zone of a schedule that names none. */
export const DEFAULT_TZ = 'UTC';

/** The next `count` times `cron` fires in `tz` strictly after `afterMs`, ms since the epoch. */
export function nextTimes(cron: string, tz: string, afterMs: number, count: number): number[] {
  if (count <= 0) return [];
  const it = CronExpressionParser.parse(cron, { tz, currentDate: afterMs });
  return it.take(count).map((d) => d.getTime());
}

/**
 * The next `count` ticks of a scheduler: the one BullMQ has queued (`nextMs`, maybe overdue
 * while no worker takes it), then the cron's following times after now (however many ticks
 * were missed, the first worker starts one run, then goes on from the next time after now).
 */
export function upcomingTimes(
  cron: string,
  tz: string,
  nextMs: number | null,
  count: number,
  nowMs: number,
): number[] {
  if (count <= 0) return [];
  const first = nextMs ?? nextTimes(cron, tz, nowMs, 1)[0];
  if (first === undefined) return [];
  return [first, ...nextTimes(cron, tz, Math.max(first, nowMs), count - 1)];
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      weekday: 'short',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    });
    formatters.set(tz, f);
  }
  return f;
}

function partsOf(ms: number, tz: string): Record<string, string> {
  const parts: Record<string, string> = {};
  for (const p of formatter(tz).formatToParts(ms)) parts[p.type] = p.value;
  return parts;
}

/** The UTC offset of `tz` at `ms`, as `+02:00` (`GMT` alone is `+00:00`). */
function offsetOf(parts: Record<string, string>): string {
  const name = parts.timeZoneName ?? 'GMT';
  return name === 'GMT' ? '+00:00' : name.replace(/^GMT/, '');
}

/** `ms` in `tz` for people: `Mon 2026-03-30 06:00:00 +02:00`. */
export function formatInZone(ms: number, tz: string): string {
  const p = partsOf(ms, tz);
  return `${p.weekday} ${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${offsetOf(p)}`;
}

/** `ms` in `tz` as ISO 8601 with the zone's offset: `2026-03-30T06:00:00+02:00`. */
export function isoInZone(ms: number, tz: string): string {
  const p = partsOf(ms, tz);
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}${offsetOf(p)}`;
}
