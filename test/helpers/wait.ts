/**
 * Waiting for a condition in tests: poll with a deadline, and on timeout say what was awaited
 * and what was last seen, instead of hanging until the test's own timeout.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';

export interface WaitTiming {
  /** Default 20,000 ms: below the integration test timeout, so this message is the one seen. */
  timeoutMs?: number;
  /** Pause between two reads; default 20 ms. */
  intervalMs?: number;
}

export interface WaitOptions<T> extends WaitTiming {
  /** When the wait is over; default: the value is truthy. */
  until?: (value: T) => boolean;
}

type Truthy<T> = Exclude<T, undefined | null | false | 0 | ''>;

/**
 * Reads `read()` until `until(value)` holds (by default: until the value is truthy) and returns
 * that value. A read that throws counts as not yet; its error is reported if the deadline passes.
 */
export function waitFor<T>(
  what: string,
  read: () => T | Promise<T>,
  options: WaitTiming & { until: (value: T) => boolean },
): Promise<T>;
export function waitFor<T>(
  what: string,
  read: () => T | Promise<T>,
  options?: WaitTiming,
): Promise<Truthy<T>>;
export async function waitFor<T>(
  what: string,
  read: () => T | Promise<T>,
  options: WaitOptions<T> = {},
): Promise<T> {
  const { until = Boolean, timeoutMs = 20_000, intervalMs = 20 } = options;
  const deadline = Date.now() + timeoutMs;
  let last: Seen = { value: undefined };
  for (;;) {
    try {
      const value = await read();
      if (until(value)) return value;
      last = { value };
    } catch (error) {
      last = { error };
    }
    if (Date.now() >= deadline) throw new Error(timedOut(what, timeoutMs, last));
    await sleep(intervalMs);
  }
}

type Seen = { value: unknown } | { error: unknown };

function timedOut(what: string, timeoutMs: number, last: Seen): string {
  const seen =
    'error' in last
      ? `last error: ${inspect(last.error, { depth: 2 })}`
      : `last value: ${inspect(last.value, { depth: 4, breakLength: 120 })}`;
  return `timed out after ${timeoutMs} ms waiting for ${what}; ${seen}`;
}
