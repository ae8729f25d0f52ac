/**
 * Per-team request limits, counted the way a service might count them (`mode`), and an optional
 * cap on requests in flight. Every refusal answers 429 with the hosted service's text; what its
 * numbers mean depends on the mode:
 *
 * | mode           | counts                                                  | retry after / resets at            |
 * |----------------|---------------------------------------------------------|------------------------------------|
 * | `fixed`        | requests per window of `windowMs` aligned to the epoch  | the window's end (the whole        |
 * |                | (one minute: wall-clock minutes, as the hosted service  | allowance comes back then)         |
 * |                | counts "req/min"); refused requests count too           |                                    |
 * | `sliding`      | requests admitted in the last `windowMs` (a sliding log)| when the oldest of them leaves the |
 * |                |                                                         | window: one slot, not the allowance|
 * | `token-bucket` | a bucket of `limit` tokens refilled evenly at `limit`   | retry: the next token; resets: the |
 * |                | per `windowMs`                                          | bucket full again                  |
 */

export const RATE_LIMIT_MODES = ['fixed', 'sliding', 'token-bucket'] as const;
export type RateLimitMode = (typeof RATE_LIMIT_MODES)[number];

/** The hosted service counts per minute. */
export const DEFAULT_WINDOW_MS = 60_000;

export interface RateLimitSettings {
  /** Requests per window per team; undefined = no limit. */
  limit: number | undefined;
  /** The window the limit counts over, in ms. */
  windowMs: number;
  mode: RateLimitMode;
  /** Requests in flight per team; undefined = no limit. */
  maxConcurrency: number | undefined;
}

export interface RateLimitRejection {
  /** Requests counted in the current window, this one included. */
  consumed: number;
  remaining: number;
  /** Whole seconds until the next request may pass (at least 1). */
  retryAfterS: number;
  resetsAt: Date;
  /** The window the counts are per, in ms (named in the message: "req/min"). */
  windowMs: number;
}

/** How one team's requests are counted in one mode. */
interface Counter {
  /** Counts a request at `nowMs`; a rejection when it is over `limit`. */
  take(nowMs: number, limit: number, windowMs: number): RateLimitRejection | undefined;
  /** Requests counted now (for a concurrency refusal's message). */
  used(nowMs: number, limit: number, windowMs: number): number;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

class FixedWindow implements Counter {
  private startMs = Number.NEGATIVE_INFINITY;
  private count = 0;

  take(nowMs: number, limit: number, windowMs: number) {
    this.roll(nowMs, windowMs);
    this.count += 1;
    if (this.count <= limit) return undefined;
    const endMs = this.startMs + windowMs;
    return {
      consumed: this.count,
      remaining: 0,
      retryAfterS: seconds(endMs - nowMs),
      resetsAt: new Date(endMs),
      windowMs,
    };
  }

  used(nowMs: number, _limit: number, windowMs: number) {
    this.roll(nowMs, windowMs);
    return this.count;
  }

  private roll(nowMs: number, windowMs: number) {
    const startMs = Math.floor(nowMs / windowMs) * windowMs;
    if (startMs !== this.startMs) {
      this.startMs = startMs;
      this.count = 0;
    }
  }
}

class SlidingLog implements Counter {
  /** Times of admitted requests, oldest first, from `head` on. */
  private times: number[] = [];
  private head = 0;

  take(nowMs: number, limit: number, windowMs: number) {
    const n = this.used(nowMs, limit, windowMs);
    if (n < limit) {
      this.times.push(nowMs);
      return undefined;
    }
    // The request that frees a slot is the (n - limit + 1)-th oldest: with a lowered limit,
    // more than one must leave first.
    const freesAt = this.times[this.head + n - limit]! + windowMs;
    return {
      consumed: n + 1,
      remaining: 0,
      retryAfterS: seconds(freesAt - nowMs),
      resetsAt: new Date(freesAt),
      windowMs,
    };
  }

  used(nowMs: number, _limit: number, windowMs: number) {
    while (this.head < this.times.length && this.times[this.head]! <= nowMs - windowMs) this.head++;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
    return this.times.length - this.head;
  }
}

class TokenBucket implements Counter {
  private tokens = Number.POSITIVE_INFINITY;
  private atMs = 0;

  take(nowMs: number, limit: number, windowMs: number) {
    this.refill(nowMs, limit, windowMs);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return undefined;
    }
    const msPerToken = windowMs / limit;
    return {
      consumed: Math.ceil(limit - this.tokens) + 1,
      remaining: 0,
      retryAfterS: seconds((1 - this.tokens) * msPerToken),
      resetsAt: new Date(nowMs + Math.ceil((limit - this.tokens) * msPerToken)),
      windowMs,
    };
  }

  used(nowMs: number, limit: number, windowMs: number) {
    this.refill(nowMs, limit, windowMs);
    return Math.ceil(limit - this.tokens);
  }

  private refill(nowMs: number, limit: number, windowMs: number) {
    const earned = ((nowMs - this.atMs) * limit) / windowMs;
    // A lowered limit is a smaller bucket: tokens above it are gone.
    this.tokens = Math.min(limit, this.tokens + Math.max(0, earned));
    this.atMs = nowMs;
  }
}

const COUNTERS: Record<RateLimitMode, () => Counter> = {
  fixed: () => new FixedWindow(),
  sliding: () => new SlidingLog(),
  'token-bucket': () => new TokenBucket(),
};

export class RateLimiter {
  private counters = new Map<string, Counter>();
  private inFlight = new Map<string, number>();
  private _settings: RateLimitSettings;

  constructor(settings: RateLimitSettings) {
    this._settings = { ...settings };
  }

  get settings(): RateLimitSettings {
    return { ...this._settings };
  }

  /**
   * Replaces the settings. Counts start afresh unless `keepCounts` is set and mode and window
   * stay the same: then a new limit applies to what was already counted, as when a plan
   * changes mid-window.
   */
  configure(settings: RateLimitSettings, keepCounts = false): void {
    const same =
      settings.mode === this._settings.mode && settings.windowMs === this._settings.windowMs;
    this._settings = { ...settings };
    if (!(keepCounts && same)) this.counters.clear();
  }

  /**
   * Counts one request of `team` at `nowMs`; returns a rejection when over a limit. A request
   * that is admitted holds a concurrency slot until `release(team)`. A request refused for
   * concurrency still counts against the rate.
   */
  admit(team: string, nowMs: number): RateLimitRejection | undefined {
    const { limit, windowMs, mode, maxConcurrency } = this._settings;
    let counter = this.counters.get(team);
    if (!counter) {
      counter = COUNTERS[mode]();
      this.counters.set(team, counter);
    }
    if (limit !== undefined) {
      const rejection = counter.take(nowMs, limit, windowMs);
      if (rejection) return rejection;
    }
    const flying = this.inFlight.get(team) ?? 0;
    if (maxConcurrency !== undefined && flying >= maxConcurrency) {
      // Something remains of the rate (or there is no rate limit): the rate is not what ran out.
      const used = limit === undefined ? flying + 1 : counter.used(nowMs, limit, windowMs);
      return {
        consumed: used,
        remaining: limit === undefined ? 1 : Math.max(0, limit - used),
        retryAfterS: 1,
        resetsAt: new Date(nowMs + 1000),
        windowMs,
      };
    }
    this.inFlight.set(team, flying + 1);
    return undefined;
  }

  release(team: string): void {
    const flying = this.inFlight.get(team) ?? 0;
    if (flying <= 1) this.inFlight.delete(team);
    else this.inFlight.set(team, flying - 1);
  }
}
