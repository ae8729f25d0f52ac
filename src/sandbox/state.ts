/**
 * The live state of one sandbox (accounts, limits, faults, ledger, caches) and the `control`
 * object tests use to change it at runtime (also reachable over HTTP under `/_sandbox/...`).
 */
import { Accounts } from './auth.ts';
import { createRandom, type Random } from './faults.ts';
import { Ledger, type LedgerSnapshot } from './ledger.ts';
import { createMediaSigner, type MediaSigner } from './media.ts';
import {
  type FaultRates,
  type LatencyRange,
  normaliseFaults,
  type ResolvedOptions,
} from './options.ts';
import { RateLimiter } from './rate-limit.ts';
import { SearchEngine } from './search.ts';

export interface RateLimitUpdate {
  /** Requests per minute per team; undefined or null removes the limit. */
  perMinute?: number | null;
  /** Requests in flight per team; undefined or null removes the limit. */
  maxConcurrency?: number | null;
  /** Send `Retry-After` on 429. Unchanged when omitted. */
  retryAfterHeader?: boolean;
}

export interface SandboxControl {
  /** Replaces the fault probabilities (omitted ones become 0). */
  setFaults(faults: FaultRates): void;
  /** Replaces the simulated latency; undefined removes it. */
  setLatency(latency: LatencyRange | undefined): void;
  /** Replaces the rate and concurrency limits. */
  setRateLimit(update: RateLimitUpdate): void;
  /** Sets the credit balance of a key. */
  setCredits(key: string, credits: number): void;
  /** Empties the ledger (balances stay). */
  resetLedger(): void;
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
  signer: MediaSigner;
  engine: SearchEngine;
  control: SandboxControl;
  snapshot(): LedgerSnapshot;
}

export function createState(options: ResolvedOptions): SandboxState {
  const accounts = new Accounts(options.keys);
  const ledger = new Ledger(() => accounts.byKey);
  const state: SandboxState = {
    options,
    accounts,
    limiter: new RateLimiter({
      perMinute: options.rateLimitPerMinute,
      maxConcurrency: options.maxConcurrency,
    }),
    ledger,
    random: createRandom(options.seed),
    faults: options.faults,
    latency: options.latency,
    retryAfterHeader: options.retryAfterHeader,
    signer: createMediaSigner(options.timeScale),
    engine: new SearchEngine(options.seed),
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
        state.limiter.settings = {
          perMinute: update.perMinute ?? undefined,
          maxConcurrency: update.maxConcurrency ?? undefined,
        };
        state.limiter.resetWindows();
        if (update.retryAfterHeader !== undefined) state.retryAfterHeader = update.retryAfterHeader;
      },
      setCredits(key, credits) {
        accounts.setCredits(key, credits);
      },
      resetLedger() {
        ledger.reset();
      },
    },
  };
  return state;
}
