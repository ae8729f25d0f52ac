/** Small flag parsers shared by commands (dates, lists, one-of choices, numbers, concurrency). */
import { InvalidArgumentError } from 'commander';

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * `--since DATE`: `YYYY-MM-DD` (midnight UTC) or an ISO 8601 date-time (UTC unless it names an
 * offset). Returns ms since the epoch.
 */
export function parseSince(value: string): number {
  const text = value.trim();
  if (!DATE.test(text)) {
    throw new InvalidArgumentError(
      'expected YYYY-MM-DD or an ISO 8601 date-time such as 2025-01-02T10:00:00Z',
    );
  }
  const zoned = text.length > 10 && !/(Z|[+-]\d{2}:\d{2})$/.test(text) ? `${text}Z` : text;
  const ms = Date.parse(zoned);
  // Date.parse rolls 2025-02-30 over to March: the day must exist as written.
  const day = Date.parse(text.slice(0, 10));
  if (Number.isNaN(ms) || new Date(day).toISOString().slice(0, 10) !== text.slice(0, 10)) {
    throw new InvalidArgumentError(`not a real date: ${value}`);
  }
  return ms;
}

/** `a,b,c` → ['a', 'b', 'c'] (blanks dropped). */
export function parseList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Flags with `--out -` read as no `--out`: standard output, as in most tools. */
export function dashIsStdout<T extends { out?: string | undefined }>(flags: T): T {
  return flags.out === '-' ? { ...flags, out: undefined } : flags;
}

/** A parser accepting one of `choices`. */
export function oneOf<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    if ((choices as readonly string[]).includes(value)) return value as T;
    throw new InvalidArgumentError(`expected one of ${choices.join(', ')}`);
  };
}

/**
 * A whole number written in plain decimal digits: `Number` alone would take `0x10`, `1e1`,
 * ` 8 ` and the empty string (0).
 */
function decimal(value: string): number | undefined {
  if (!/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** `-c 16`, `--limit 20`: a whole number >= 1, in decimal digits. */
export function positiveInt(value: string): number {
  const n = decimal(value);
  if (n === undefined || n < 1) {
    throw new InvalidArgumentError('expected a whole number >= 1, in decimal digits');
  }
  return n;
}

/**
 * Most searches in flight in one process (`run --local -c`, `worker -c`). Every 16 of them
 * hold a Redis connection (625 at this bound, of the 10,000 clients Redis allows by default to
 * every process using it), each holds an HTTP connection and its answer in memory, and the
 * service's rate limit caps the pace long before: far beyond this, a process runs out of heap
 * or connections instead of searching faster. More workers (processes, hosts) go further.
 */
export const MAX_CONCURRENCY = 10_000;

/** `-c 32`: searches in flight in this process, 1 to MAX_CONCURRENCY, in decimal digits. */
export function concurrency(value: string): number {
  const n = decimal(value);
  if (n === undefined || n < 1 || n > MAX_CONCURRENCY) {
    throw new InvalidArgumentError(
      `expected a whole number from 1 to ${MAX_CONCURRENCY}, in decimal digits (searches in flight in one process; start more workers for more)`,
    );
  }
  return n;
}

/** `plan --limit 0`: a whole number >= 0, in decimal digits. */
export function wholeNumber(value: string): number {
  const n = decimal(value);
  if (n === undefined)
    throw new InvalidArgumentError('expected a whole number >= 0, in decimal digits');
  return n;
}

/** `--metrics-port 9464`: 0 to 65535 (0 picks a free one), in decimal digits. */
export function port(value: string): number {
  const n = decimal(value);
  if (n === undefined || n > 65_535) {
    throw new InvalidArgumentError(
      'expected a port number, 0..65535 in decimal digits (0 picks a free one)',
    );
  }
  return n;
}

const DURATION = /^(\d{1,9})(ms|s|m|h)?$/;
const DURATION_UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `--give-up-after 10m`: a whole number with a unit (`ms`, `s`, `m`, `h`; seconds without one), in ms. */
export function duration(value: string): number {
  const m = DURATION.exec(value.trim());
  if (!m) {
    throw new InvalidArgumentError(
      'expected a duration such as 90s, 10m or 2h (seconds without a unit)',
    );
  }
  return Number(m[1]) * (DURATION_UNIT_MS[m[2] ?? 's'] ?? 1000);
}
