/**
 * The live state of one sandbox (accounts, limits, faults, ledger, caches) and the `control`
 * object tests use to change it at runtime (also reachable over HTTP under `/_sandbox/...`).
 */
import { Accounts } from './auth.ts';
import { corpus } from './corpus.ts';
import { createRandom, type Random } from './faults.ts';
import { Ledger, type LedgerSnapshot } from './ledger.ts';
import { createMediaSigner, type MediaSigner } from './media.ts';
import {
  type FaultRates,
  type LatencyRange,
  type MediaFaults,
  normaliseFaults,
  normaliseMediaFaults,
  type ResolvedMediaFaults,
  type ResolvedOptions,
} from './options.ts';
import { RateLimiter, type RateLimitMode } from './rate-limit.ts';
import { SearchEngine } from './search.ts';
import { checkEpoch } from './world-options.ts';

export interface RateLimitUpdate {
  /** Requests per team per window; undefined or null removes the limit. */
  perMinute?: number | null;
  /** Requests in flight per team; undefined or null removes the limit. */
  maxConcurrency?: number | null;
  /** How requests are counted. Unchanged when omitted. */
  mode?: RateLimitMode;
  /** The window the limit counts over, in ms. Unchanged when omitted. */
  windowMs?: number;
  /**
   * Keep what was counted so far (same mode and window only): the new limit applies to it at
   * once, as when a plan changes mid-window. Default false: counting starts afresh.
   */
  keepCounts?: boolean;
  /** Send `Retry-After` on 429. Unchanged when omitted. */
  retryAfterHeader?: boolean;
}

export interface SandboxControl {
  /** Replaces the fault probabilities (omitted ones become 0). */
  setFaults(faults: FaultRates): void;
  /** Replaces the simulated latency; undefined removes it. */
  setLatency(latency: LatencyRange | undefined): void;
  /** Replaces the rate and concurrency limits (and, when given, the mode and window). */
  setRateLimit(update: RateLimitUpdate): void;
  /** Sets the credit balance of a key. */
  setCredits(key: string, credits: number): void;
  /** Empties the ledger (balances stay). */
  resetLedger(): void;
  /** Replaces the media host's faults (omitted ones are off). */
  setMediaFaults(faults: MediaFaults): void;
  /** The epoch of the world (see world.ts). */
  epoch(): number;
  /** Moves the world to `epoch` (back or forth); answers are those of that epoch. */
  setEpoch(epoch: number): void;
  /** Moves the world `by` epochs on (default 1) and returns the new epoch. */
  advanceEpoch(by?: number): number;
}

export interface SandboxState {
  options: ResolvedOptions;
  accounts: Accounts;
  limiter: RateLimiter;
  ledger: Ledger;
  /** Draws faults and latencies. */
  random: Random;
  faults: Required<FaultRates>;
  latency: LatencyRange | undefined;
  retryAfterHeader: boolean;
  mediaFaults: ResolvedMediaFaults;
  signer: MediaSigner;
  engine: SearchEngine;
  /** The epoch searches are answered at. */
  epoch: number;
  control: SandboxControl;
  snapshot(): LedgerSnapshot;
}

export function createState(options: ResolvedOptions): SandboxState {
  // Read now rather than at the first scrape, so a missing corpus is refused at start.
  if (options.world.content === 'corpus') corpus();
  const accounts = new Accounts(options.keys);
  const ledger = new Ledger(() => accounts.byKey);
  const state: SandboxState = {
    options,
    accounts,
    limiter: new RateLimiter({
      limit: options.rateLimitPerMinute,
      windowMs: options.rateLimitWindowMs,
      mode: options.rateLimitMode,
      maxConcurrency: options.maxConcurrency,
    }),
    ledger,
    random: createRandom(options.seed),
    faults: options.faults,
    latency: options.latency,
    retryAfterHeader: options.retryAfterHeader,
    mediaFaults: options.mediaFaults,
    signer: createMediaSigner(options.timeScale),
    engine: new SearchEngine(options.seed, options.world),
    epoch: options.world.epoch,
    snapshot: () => ledger.snapshot(),
    control: {
      setFaults(faults) {
        state.faults = normaliseFaults(faults);
      },
      setLatency(latency) {
        if (latency && !(latency.minMs >= 0 && latency.maxMs >= latency.minMs)) {
          throw new Error('latency needs 0 <= minMs <= maxMs');
        }
        state.latency = latency;
      },
      setRateLimit(update) {
        const current = state.limiter.settings;
        const windowMs = update.windowMs ?? current.windowMs;
        if (!(Number.isSafeInteger(windowMs) && windowMs > 0)) {
          throw new Error('windowMs must be a positive whole number of ms');
        }
        state.limiter.configure(
          {
            limit: update.perMinute ?? undefined,
            windowMs,
            mode: update.mode ?? current.mode,
            maxConcurrency: update.maxConcurrency ?? undefined,
          },
          update.keepCounts,
        );
        if (update.retryAfterHeader !== undefined) state.retryAfterHeader = update.retryAfterHeader;
      },
      setCredits(key, credits) {
        accounts.setCredits(key, credits);
      },
      resetLedger() {
        ledger.reset();
      },
      setMediaFaults(faults) {
        state.mediaFaults = normaliseMediaFaults(faults);
      },
      epoch: () => state.epoch,
      setEpoch(epoch) {
        checkEpoch(epoch);
        state.epoch = epoch;
      },
      advanceEpoch(by = 1) {
        checkEpoch(state.epoch + by);
        state.epoch += by;
        return state.epoch;
      },
    },
  };
  return state;
}
