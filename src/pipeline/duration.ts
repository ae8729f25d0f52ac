/**
 * Durations written as a whole number and a unit: `90m`, `12h`, `30d`, `2w` (`retention.maxAge`,
 * `harvest prune --older-than`). A day is 24 hours; months and years, whose length varies, are
 * not accepted.
 */

const UNIT_MS = {
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 7 * 86_400_000,
} as const;

const DURATION = /^(\d{1,9})([mhdw])$/;

/** What a duration may look like, for messages. */
export const DURATION_FORMAT = 'a whole number and a unit: m (minutes), h, d (days) or w, e.g. 30d';

/** The duration in ms, or undefined when `text` is not one (or is zero). */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return ms > 0 ? ms : undefined;
}
