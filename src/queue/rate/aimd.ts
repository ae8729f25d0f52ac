/**
 * Rate adaptation (AIMD), pure: the `paced` regime of src/queue/rate/model.ts, for services
 * that refill evenly (a token bucket) or give no counts. On a wave of 429s, a multiplicative
 * decrease (or the limit the 429 reveals, when lower); after a quiet spell, an additive increase
 * up to the known ceiling. `null` means "no limit known yet".
 */

export interface RateState {
  /** Allowed rate in requests per second; null while unbounded. */
  ratePerSec: number | null;
  /** Never increase past this (a configured plan limit or one read from a 429); null if none. */
  ceilingPerSec: number | null;
  /** When the last decrease happened (ms epoch); a wave of 429s decreases once. */
  lastDecreaseAt: number;
  /** When the last increase happened (ms epoch). */
  lastIncreaseAt: number;
}

export const INITIAL_RATE_STATE: RateState = {
  ratePerSec: null,
  ceilingPerSec: null,
  lastDecreaseAt: 0,
  lastIncreaseAt: 0,
};

/** Fraction of a known limit the pool aims at, leaving room for clock skew between windows. */
export const HEADROOM = 0.97;
/** Multiplicative decrease on a wave of 429s without a usable hint. */
export const DECREASE_FACTOR = 0.7;
/** No increase until this long after a decrease, in ms. */
export const QUIET_AFTER_DECREASE_MS = 10_000;
/** At most one increase per this interval, in ms. */
export const INCREASE_INTERVAL_MS = 2_000;
/** Smallest rate the controller goes down to, per second. */
export const MIN_RATE_PER_SEC = 0.2;

export function startingState(rateLimitPerMinute: number | undefined): RateState {
  if (!rateLimitPerMinute) return INITIAL_RATE_STATE;
  const perSec = (rateLimitPerMinute / 60) * HEADROOM;
  return { ...INITIAL_RATE_STATE, ratePerSec: perSec, ceilingPerSec: perSec };
}

export interface LimitedEvent {
  /** How long the service asked to wait, in ms. */
  waitMs: number;
  /** A limit per minute read from the 429 message, if any. */
  limitPerMinute?: number;
  /** The success rate this process observed lately, per second (used while unbounded). */
  observedPerSec: number;
}

export function onLimited(state: RateState, event: LimitedEvent, nowMs: number): RateState {
  const hint = event.limitPerMinute ? (event.limitPerMinute / 60) * HEADROOM : null;
  // One decrease per wave: the answers to requests already in flight say little new. Their
  // hints count the rejected requests too, so only a lower one (an earlier answer handled
  // late) is taken.
  const sameWave =
    state.lastDecreaseAt > 0 && nowMs < state.lastDecreaseAt + Math.max(event.waitMs, 1000);
  if (sameWave) {
    if (hint === null || state.ratePerSec === null || hint >= state.ratePerSec) return state;
    return { ...state, ratePerSec: hint, ceilingPerSec: hint };
  }
  const current = state.ratePerSec ?? (event.observedPerSec > 0 ? event.observedPerSec : null);
  let next: number;
  if (hint !== null) {
    next = state.ratePerSec === null ? hint : Math.min(hint, state.ratePerSec * DECREASE_FACTOR);
  } else if (current !== null) {
    next = current * DECREASE_FACTOR;
  } else {
    next = 1;
  }
  return {
    ratePerSec: Math.max(MIN_RATE_PER_SEC, next),
    ceilingPerSec: hint ?? state.ceilingPerSec,
    lastDecreaseAt: nowMs,
    lastIncreaseAt: state.lastIncreaseAt,
  };
}

export function onQuiet(state: RateState, nowMs: number): RateState {
  if (state.ratePerSec === null) return state;
  if (nowMs < state.lastDecreaseAt + QUIET_AFTER_DECREASE_MS) return state;
  if (nowMs < state.lastIncreaseAt + INCREASE_INTERVAL_MS) return state;
  const ceiling = state.ceilingPerSec ?? Number.POSITIVE_INFINITY;
  if (state.ratePerSec >= ceiling) return state;
  const next = Math.min(ceiling, state.ratePerSec + Math.max(0.5, state.ratePerSec * 0.05));
  return { ...state, ratePerSec: next, lastIncreaseAt: nowMs };
}
