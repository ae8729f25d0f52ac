/**
 * Per-team request limits: a fixed one-minute window (as the hosted service counts
 * "req/min") and an optional cap on requests in flight. Both answer 429.
 */

const WINDOW_MS = 60_000;

export interface RateLimitSettings {
  /** Requests per minute per team; undefined = no limit. */
  perMinute: number | undefined;
  /** Requests in flight per team; undefined = no limit. */
  maxConcurrency: number | undefined;
}

export interface RateLimitRejection {
  /** Requests counted in the current window, this one included. */
  consumed: number;
  remaining: number;
  /** Whole seconds until the window resets (at least 1). */
  retryAfterS: number;
  resetsAt: Date;
}

/** A rejection in the window starting at `startMs`, with nothing remaining. */
function rejection(consumed: number, startMs: number, nowMs: number): RateLimitRejection {
  const endMs = startMs + WINDOW_MS;
  return {
    consumed,
    remaining: 0,
    retryAfterS: Math.max(1, Math.ceil((endMs - nowMs) / 1000)),
    resetsAt: new Date(endMs),
  };
}

export class RateLimiter {
  private windows = new Map<string, { startMs: number; count: number }>();
  private inFlight = new Map<string, number>();

  constructor(public settings: RateLimitSettings) {}

  /**
   * Counts one request of `team` at `nowMs`; returns a rejection when over a limit. A request
   * that is admitted holds a concurrency slot until `release(team)`.
   */
  admit(team: string, nowMs: number): RateLimitRejection | undefined {
    const { perMinute, maxConcurrency } = this.settings;
    const startMs = Math.floor(nowMs / WINDOW_MS) * WINDOW_MS;
    if (perMinute !== undefined) {
      let window = this.windows.get(team);
      if (!window || window.startMs !== startMs) {
        window = { startMs, count: 0 };
        this.windows.set(team, window);
      }
      window.count += 1;
      if (window.count > perMinute) return rejection(window.count, startMs, nowMs);
    }
    const flying = this.inFlight.get(team) ?? 0;
    if (maxConcurrency !== undefined && flying >= maxConcurrency) {
      const window = this.windows.get(team);
      const consumed = window?.startMs === startMs ? window.count : flying + 1;
      return { ...rejection(consumed, startMs, nowMs), retryAfterS: 1 };
    }
    this.inFlight.set(team, flying + 1);
    return undefined;
  }

  release(team: string): void {
    const flying = this.inFlight.get(team) ?? 0;
    if (flying <= 1) this.inFlight.delete(team);
    else this.inFlight.set(team, flying - 1);
  }

  /** Forgets every window (the in-flight counts stay, as those requests are still running). */
  resetWindows(): void {
    this.windows.clear();
  }
}
