/**
 * When a schedule fires, and how such a time reads in the schedule's own time zone. Pure; uses
 * cron-parser, as BullMQ's job schedulers do, so the times shown are the times they fire.
 */
import type { RepeatStrategy } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';

/** The time zone of a schedule that names none. */
export const DEFAULT_TZ = 'UTC';

/** Days the matching by hand looks ahead before it gives up (four years and a day). */
const HORIZON_DAYS = 4 * 366;
const DAY_MS = 86_400_000;

/**
 * When `cron` next fires in `tz` strictly after `afterMs`, ms since the epoch; undefined when
 * it never does again.
 *
 * cron-parser answers this, except next to some changes of the clocks it cannot cross: in a
 * zone whose clocks go back 30 minutes (Australia/Lord_Howe), a cron on the hour throws "loop
 * limit exceeded" for the day before the change (a weekly one for the week before, one on the
 * first Sunday of the month for the five weeks before). A job scheduler whose next time throws
 * ends for good, without a word (BullMQ takes the error as "no next time"). There, the next
 * time is found by hand (`matchByHand`).
 */
export function nextFire(
  cron: string,
  tz: string | undefined,
  afterMs: number,
): number | undefined {
  return fire(cron, tz, afterMs).at;
}

function fire(
  cron: string,
  tz: string | undefined,
  afterMs: number,
): { at: number | undefined; byHand: boolean } {
  const expr = CronExpressionParser.parse(cron, { ...(tz ? { tz } : {}), currentDate: afterMs });
  try {
    return { at: expr.next().getTime(), byHand: false };
  } catch (error) {
    if (!/loop limit/i.test((error as Error).message)) return { at: undefined, byHand: false };
  }
  return { at: matchByHand(cron, tz, afterMs), byHand: true };
}

/**
 * The next time `cron` fires in `tz` after `afterMs`, found without cron-parser's search: day by
 * day in the zone, each wall time the cron's hours, minutes and seconds make is turned into the
 * instant that shows it (none in a gap the clocks skip; of two in an hour they repeat, the
 * first) and matched against the whole cron (days, months, weekdays). A day whose first such
 * instant does not match is passed over whole. Tens of ms at most.
 */
export function matchByHand(
  cron: string,
  tz: string | undefined,
  afterMs: number,
): number | undefined {
  const zone = tz ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const expr = CronExpressionParser.parse(cron, { tz: zone });
  const sorted = (values: readonly (number | string)[]) => values.map(Number).sort((a, b) => a - b);
  const hours = sorted(expr.fields.hour.values);
  const minutes = sorted(expr.fields.minute.values);
  const seconds = sorted(expr.fields.second.values);
  const from = partsOf(afterMs, zone);
  for (let day = 0; day <= HORIZON_DAYS; day++) {
    const date = Date.UTC(Number(from.year), Number(from.month) - 1, Number(from.day) + day);
    let dayMatches = false;
    for (const wall of wallTimes(date, hours, minutes, seconds)) {
      const at = firstInstantOf(wall, zone);
      if (at === undefined) continue;
      if (!dayMatches) {
        // Hours, minutes and seconds match by construction: this says whether the day does.
        if (!expr.includesDate(new Date(at))) break;
        dayMatches = true;
      }
      if (at > afterMs) return at;
    }
  }
  return undefined;
}

/** The wall times of a day (`date`: its midnight in ms, read as UTC) a cron makes, in order. */
function* wallTimes(
  date: number,
  hours: readonly number[],
  minutes: readonly number[],
  seconds: readonly number[],
): Generator<number> {
  for (const h of hours) {
    for (const m of minutes) {
      for (const s of seconds) yield date + ((h * 60 + m) * 60 + s) * 1000;
    }
  }
}

/**
 * The first instant whose wall time in `tz` is `wall` (ms, read as UTC): undefined in a gap
 * the clocks skip; of the two in an hour they repeat, the earlier (a cron fires there once).
 */
function firstInstantOf(wall: number, tz: string): number | undefined {
  // The offsets in force a day either side: a change of the clocks is between them.
  const offsets = new Set([offsetMs(wall - DAY_MS, tz), offsetMs(wall + DAY_MS, tz)]);
  const instants = [...offsets]
    .map((offset) => wall - offset)
    .filter((at) => at + offsetMs(at, tz) === wall)
    .sort((a, b) => a - b);
  return instants[0];
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
  // Once cron-parser could not answer, the times after are found by hand too: each failing
  // cron-parser call costs about half a second.
  let byHand = false;
  while (out.length < count && at !== undefined) {
    if (byHand) at = matchByHand(cron, tz, at);
    else ({ at, byHand } = fire(cron, tz, at));
    if (at !== undefined) out.push(at);
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
