/**
 * What harvest knows about the service's rate limit, and how each 429 changes it. Pure.
 *
 * Regimes (how the service counts, as far as its answers tell) and how calls are admitted in
 * each (src/queue/rate/controller.ts counts the pool's calls in Redis):
 *
 * | regime    | known                               | admission                                    |
 * |-----------|-------------------------------------|----------------------------------------------|
 * | `open`    | nothing                             | every call (each is logged)                  |
 * | `fixed`   | limit, window, the window's end     | up to the limit at full concurrency, then    |
 * |           |                                     | every worker holds until the end             |
 * | `rolling` | limit, window                       | at most the limit in any window (a mirror of |
 * |           |                                     | a sliding log: safe under every regime)      |
 * | `paced`   | a rate (a token bucket, or a        | evenly at the rate; AIMD (src/queue/rate/aimd.ts) |
 * |           | service that gives no counts)       |                                              |
 *
 * How a 429 moves it (a "stale" 429 answers a call admitted under an older model: it belongs to
 * a wave already learned from, and can only lower the limit):
 *
 * | before      | the 429 says                                   | after                           |
 * |-------------|------------------------------------------------|---------------------------------|
 * | any         | something remains (not the rate)               | unchanged; hold for its wait    |
 * | any         | no counts                                      | `paced`, decreased (AIMD)       |
 * | open, paced | counts; resets when the wait ends (`window`)   | `fixed` until that reset        |
 * | open, paced | counts; wait much shorter than reset (`refill`)| `paced` at limit / window       |
 * | open, paced | counts; shape unknown                          | `rolling`                       |
 * | fixed       | a lower limit, window shape                    | `fixed` with it (a plan change) |
 * | fixed       | anything else                                  | `rolling` (not a fixed window)  |
 * | rolling     | a lower limit                                  | `rolling` with it               |
 * | rolling     | not lower, a wait of a second or two           | `rolling`, guard x 2 (timing)   |
 * | rolling     | not lower, a longer wait                       | `rolling`, limit x 0.7          |
 */

import { DEFAULT_RATE_LIMIT_WAIT_MS } from '../../api/backoff.ts';
import {
  DECREASE_FACTOR,
  INITIAL_RATE_STATE,
  onLimited,
  type RateState,
  startingState,
} from './aimd.ts';
import { type RateLimitSignal, type Reset, resetOf } from './signal.ts';

export type Regime = 'open' | 'fixed' | 'rolling' | 'paced';

export interface RateModel {
  regime: Regime;
  /** Requests per window the service allows (fixed, rolling); null while unknown. */
  limit: number | null;
  /** The window the limit counts over, in ms. Default one minute. */
  windowMs: number;
  /** fixed: when the current window ends at the latest, epoch ms on the Redis clock. */
  windowEndsAt: number;
  /** fixed: how much sooner than `windowEndsAt` the window may really end, in ms. */
  resetSlackMs: number;
  /**
   * fixed: the windows fall on the clock's (multiples of `windowMs`), so each ends one window
   * after the last; otherwise the next one is counted from its first call.
   */
  aligned: boolean;
  /**
   * Time added after a window before its allowance counts as back, in ms: covers the way from
   * admission to the service (and the service counting a window from its first request).
   */
  guardMs: number;
  /** paced: the AIMD state. */
  pace: RateState;
  /** Changes with every lesson; a call remembers the version it was admitted under. */
  version: number;
}

/** The service counts per minute ("req/min") until it says otherwise. */
export const DEFAULT_WINDOW_MS = 60_000;

export const OPEN_MODEL: RateModel = {
  regime: 'open',
  limit: null,
  windowMs: DEFAULT_WINDOW_MS,
  windowEndsAt: 0,
  resetSlackMs: 0,
  aligned: false,
  guardMs: defaultGuardMs(DEFAULT_WINDOW_MS),
  pace: INITIAL_RATE_STATE,
  version: 0,
};

/** The guard of a window at first: 0.5% of it, between 250 ms and 1 s. */
export function defaultGuardMs(windowMs: number): number {
  return Math.min(1000, Math.max(250, Math.round(windowMs / 200)));
}

/** A wait this short after a 429 the model did not expect says calls were a little early. */
const SHORT_WAIT_MS = 2000;

export interface Lesson {
  model: RateModel;
  /** How long every worker holds, in ms. */
  holdMs: number;
}

export interface LimitedInput {
  signal: RateLimitSignal;
  /** The call was admitted under the current model (its answer is news). */
  fresh: boolean;
  nowMs: number;
  /** Successes per second this process saw lately (AIMD without a known rate). */
  observedPerSec: number;
}

/** What a 429 teaches: see the table above. */
export function learn(model: RateModel, input: LimitedInput): Lesson {
  const { signal, nowMs } = input;
  const waitMs = signal.retryAfterMs ?? DEFAULT_RATE_LIMIT_WAIT_MS;
  const windowMs = signal.windowMs ?? model.windowMs;
  const limit = signal.limit;
  if (limit === undefined) {
    if ((signal.remaining ?? 0) > 0) return { model, holdMs: waitMs };
    return lesson(model, decreasedPace(model, input, waitMs), nowMs, waitMs);
  }
  if (!input.fresh) {
    // The first answer of a wave is the most precise: later ones count the refused calls too.
    if (model.regime === 'paced') return lesson(model, pacedAt(model, limit, input), nowMs, waitMs);
    if (model.limit === null || limit >= model.limit)
      return { model, holdMs: holdOf(model, nowMs, waitMs) };
    return lesson(model, { ...model, limit }, nowMs, waitMs);
  }
  const reset = resetOf(signal, nowMs, windowMs);
  const guard = windowMs === model.windowMs ? model.guardMs : defaultGuardMs(windowMs);
  const base = { ...model, windowMs, guardMs: guard };
  const fixedUntil = ({ atMs = nowMs, earliestMs = atMs, alignedAtMs }: Reset): RateModel => ({
    ...base,
    regime: 'fixed',
    limit,
    ...(alignedAtMs === undefined
      ? { windowEndsAt: atMs, resetSlackMs: atMs - earliestMs, aligned: false }
      : { windowEndsAt: alignedAtMs + guard, resetSlackMs: guard, aligned: true }),
  });
  switch (model.regime) {
    case 'open':
    case 'paced':
      if (reset.shape === 'window') return lesson(model, fixedUntil(reset), nowMs, waitMs);
      if (reset.shape === 'refill')
        return lesson(model, pacedAt(base, limit, input), nowMs, waitMs);
      return lesson(model, { ...base, regime: 'rolling', limit }, nowMs, waitMs);
    case 'fixed': {
      const known = model.limit ?? limit;
      if (limit < known && reset.shape === 'window') {
        return lesson(model, fixedUntil(reset), nowMs, waitMs);
      }
      return lesson(
        model,
        { ...base, regime: 'rolling', limit: Math.min(known, limit) },
        nowMs,
        waitMs,
      );
    }
    case 'rolling': {
      const known = model.limit ?? limit;
      if (limit < known) return lesson(model, { ...base, regime: 'rolling', limit }, nowMs, waitMs);
      // Refused, with a slot free again at once: calls reached the service later than the guard
      // allowed for. Refused for longer: fewer calls are allowed than it says.
      const widened = Math.min(Math.round(windowMs / 20), 2 * guard);
      const next =
        waitMs <= SHORT_WAIT_MS && widened > guard
          ? { ...base, regime: 'rolling' as const, limit: known, guardMs: widened }
          : {
              ...base,
              regime: 'rolling' as const,
              limit: Math.max(1, Math.floor(known * DECREASE_FACTOR)),
            };
      return lesson(model, next, nowMs, waitMs);
    }
  }
}

/** How long workers hold under `model` after a 429 that asked for `waitMs`. */
export function holdOf(model: RateModel, nowMs: number, waitMs: number): number {
  if (model.regime === 'fixed') return Math.max(0, model.windowEndsAt - nowMs);
  return waitMs;
}

function lesson(before: RateModel, after: RateModel, nowMs: number, waitMs: number): Lesson {
  const model = { ...after, version: nextVersion(before, nowMs) };
  return { model, holdMs: holdOf(model, nowMs, waitMs) };
}

/** Versions are times (Redis clock), so they keep growing when a forgotten model is relearnt. */
function nextVersion(model: RateModel, nowMs: number): number {
  return Math.max(model.version + 1, nowMs);
}

/** Paced just under `limit` per window (a bucket that refills evenly). */
function pacedAt(model: RateModel, limit: number, input: LimitedInput): RateModel {
  const limitPerMinute = (limit * 60_000) / model.windowMs;
  const pace = onLimited(
    model.regime === 'paced' ? model.pace : INITIAL_RATE_STATE,
    {
      waitMs: input.signal.retryAfterMs ?? DEFAULT_RATE_LIMIT_WAIT_MS,
      limitPerMinute,
      observedPerSec: input.observedPerSec,
    },
    input.nowMs,
  );
  return { ...model, regime: 'paced', limit: null, pace };
}

/** A 429 without counts: decrease from the rate in force (AIMD). */
function decreasedPace(model: RateModel, input: LimitedInput, waitMs: number): RateModel {
  const from =
    model.regime === 'paced'
      ? model.pace
      : model.limit !== null
        ? startingState((model.limit * 60_000) / model.windowMs)
        : INITIAL_RATE_STATE;
  const pace = onLimited(from, { waitMs, observedPerSec: input.observedPerSec }, input.nowMs);
  return { ...model, regime: 'paced', limit: null, pace };
}
