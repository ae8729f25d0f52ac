/**
 * When a schedule fires, and how such a time reads in the schedule's own time zone. Pure; uses
 * cron-parser, as BullMQ's job schedulers do, so the times shown are the times they fire.
 */
import type { RepeatStrategy } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';

/** The time zone of a schedule that names none. */
export const DEFAULT_TZ = 'UTC';

/** How far past a failing time the matching by hand looks, in ms (two days). */
const SCAN_MS = 2 * 86_400_000;
/** Scans in a row before giving up (as BullMQ's own strategy does at once). */
const SCANS = 4;
/** Longest a fall-back of the clocks can repeat wall times, in ms (Troll's is 2 hours). */
const REPEAT_MS = 3 * 3_600_000;

/**
 * When `cron` next fires in `tz` strictly after `afterMs`, ms since the epoch; undefined when
 * it never does again.
 *
 * cron-parser answers this, except next to some changes of the clocks it cannot cross: in a
 * zone whose clocks go back 30 minutes (Australia/Lord_Howe), a cron on the hour throws "loop
 * limit exceeded" for the day before the change. A job scheduler whose next time throws ends
 * for good, without a word (BullMQ takes the error as "no next time"). There, the next time is
 * found by hand: each minute of the next two days (each of its seconds the cron names) is
 * matched against the cron in the zone, a wall time the clocks repeat firing once, as cron
 * does.
 */
export function nextFire(
  cron: string,
  tz: string | undefined,
  afterMs: number,
  scansLeft = SCANS,
): number | undefined {
  const expr = CronExpressionParser.parse(cron, { ...(tz ? { tz } : {}), currentDate: afterMs });
  try {
    return expr.next().getTime();
  } catch (error) {
    if (!/loop limit/i.test((error as Error).message)) return undefined;
  }
  const { fields } = expr;
  const seconds = [...fields.second.values].map(Number).sort((a, b) => a - b);
  const minutes = new Set(fields.minute.values.map(Number));
  const hours = new Set(fields.hour.values.map(Number));
  const zone = tz ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const first = Math.floor(afterMs / 60_000) * 60_000;
  for (let minute = first; minute <= first + SCAN_MS; minute += 60_000) {
    // The wall clock's minute and hour first (cheap), the whole cron only where they match.
    const wall = partsOf(minute, zone);
    if (!minutes.has(Number(wall.minute)) || !hours.has(Number(wall.hour))) continue;
    for (const s of seconds) {
      const at = minute + s * 1000;
      if (at > afterMs && expr.includesDate(new Date(at)) && !repeatsWallTime(at, zone)) {
        return at;
      }
    }
  }
  // Nothing within the scan: on from its end, where cron-parser may answer again (a few times
  // only: each failing cron-parser call takes most of a second, and this blocks its thread).
  return scansLeft > 1 ? nextFire(cron, tz, first + SCAN_MS, scansLeft - 1) : undefined;
}

/** Whether the wall time `at` shows in `tz` was shown already in the hours before (a fall-back). */
function repeatsWallTime(at: number, tz: string): boolean {
  const wall = at + offsetMs(at, tz);
  const earlier = at - REPEAT_MS;
  const shift = offsetMs(earlier, tz) - offsetMs(at, tz);
  if (shift <= 0) return false;
  const before = at - shift;
  return before > earlier && before + offsetMs(before, tz) === wall;
}

/** The UTC offset of `tz` at `ms`, in ms. */
function offsetMs(ms: number, tz: string): number {
  const p = partsOf(ms, tz);
  const wall = Date.UTC(
    Number(p.year),
    Number(p.month) - 1,
    Number(p.day),
    Number(p.hour),
    Number(p.minute),
    Number(p.second),
  );
  return wall - Math.floor(ms / 1000) * 1000;
}

/** The next `count` times `cron` fires in `tz` strictly after `afterMs`, ms since the epoch. */
export function nextTimes(cron: string, tz: string, afterMs: number, count: number): number[] {
  const out: number[] = [];
  let at: number | undefined = afterMs;
  while (out.length < count) {
    at = nextFire(cron, tz, at);
    if (at === undefined) break;
    out.push(at);
  }
  return out;
}

/**
 * BullMQ's repeat strategy for harvest's job schedulers (every queue and worker of the runs
 * queue takes it): BullMQ's own, with `nextFire` where cron-parser cannot answer.
 */
export const scheduleRepeatStrategy: RepeatStrategy = (millis, opts) => {
  if (!opts.pattern) return undefined;
  const start = opts.startDate === undefined ? 0 : new Date(opts.startDate).getTime();
  const next = nextFire(opts.pattern, opts.tz, Math.max(millis, start));
  const end =
    opts.endDate === undefined ? Number.POSITIVE_INFINITY : new Date(opts.endDate).getTime();
  return next !== undefined && next <= end ? next : undefined;
};

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
