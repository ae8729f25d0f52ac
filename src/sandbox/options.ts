/**
 * Sandbox options and the parsing of their command-line spellings. `startSandbox(options)` and
 * `harvest sandbox --flags` take the same settings; the flag parsers here are pure and throw
 * `UsageError` on bad input.
 */
import { UsageError } from '../errors.ts';
import { DEFAULT_WINDOW_MS, RATE_LIMIT_MODES, type RateLimitMode } from './rate-limit.ts';
import {
  type ContentMode,
  type EpochShares,
  type ResolvedWorld,
  resolveWorld,
} from './world-options.ts';

/** One accepted API key. */
export interface SandboxKey {
  /** The bearer token. */
  key: string;
  /** Team that owns the key; ledger, rate limits and active crawls are per team. */
  team: string;
  /** Starting credit balance of the key's team. */
  credits: number;
  /** The team has the threat-protection feature (may send `threatProtection`). Default false. */
  threatProtection?: boolean;
}

/** Probabilities (0..1) of injected faults on API endpoints, drawn from the seeded PRNG. */
export interface FaultRates {
  /** Answer 408 SCRAPE_TIMEOUT. Default 0. */
  timeout408?: number;
  /** Answer 500 UNKNOWN_ERROR. Default 0. */
  error500?: number;
  /** Answer 200 with a truncated JSON body (still charged). Default 0. */
  malformed?: number;
  /** Destroy the socket without answering (not charged). Default 0. */
  drop?: number;
}

/** Faults of the media host (`/media/...`). */
export interface MediaFaults {
  /**
   * Share of media files signed wrongly (answered 403 SignatureDoesNotMatch). The draw is
   * stable per file, so a re-issued URL of such a file is wrong again. Default 0.
   */
  tamper?: number;
  /** Probability that a media request is answered 503 (a transient fault). Default 0. */
  error503?: number;
  /** Serve media bodies at this rate, in bytes per second (slow downloads). Default: at once. */
  bytesPerSecond?: number | null;
}

/** Simulated work per API request, uniform in [minMs, maxMs]. */
export interface LatencyRange {
  minMs: number;
  maxMs: number;
}

export interface SandboxOptions {
  /** TCP port; 0 picks a free one. Default 0 (the CLI defaults to 3002). */
  port?: number;
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Accepted keys. Default one key `fc-sandbox` of team `sandbox` with 1,000,000 credits. */
  keys?: SandboxKey[];
  /** Teams that have the threat-protection feature, besides keys flagged with it. Default none. */
  threatProtectionTeams?: string[];
  /**
   * Requests per team per rate-limit window (one minute unless `rateLimitWindowMs` says
   * otherwise). Default: no limit.
   */
  rateLimitPerMinute?: number;
  /** How requests are counted: `fixed` windows (the hosted service), `sliding`, `token-bucket`. Default `fixed`. */
  rateLimitMode?: RateLimitMode;
  /** The window the rate limit counts over, in ms (tests use a few seconds). Default 60000. */
  rateLimitWindowMs?: number;
  /** Requests in flight per team; one more gets a 429. Default: no limit. */
  maxConcurrency?: number;
  /** Also send a `Retry-After` header (seconds) on 429. Default false, like the hosted service. */
  retryAfterHeader?: boolean;
  /**
   * Also refuse (400) what the hosted service refuses beyond the reference: see
   * `hostedServiceWarnings` in src/contract/hosted-service.ts. Default false: the reference only.
   */
  hostedRules?: boolean;
  /**
   * Answer every 200 of a search with this `creditsUsed` (and charge it), an implausible bill
   * such as 1e15. Default: what the request costs.
   */
  inflatedCredits?: number;
  /** Injected fault probabilities. Default none. */
  faults?: FaultRates;
  /**
   * Send the body of every 200 search answer at this rate, in bytes per second (a peer that
   * trickles; the headers go at once). Default: at once.
   */
  apiTrickleBytesPerSecond?: number;
  /** Simulated latency of API requests in ms. Default none. */
  latency?: LatencyRange;
  /** Multiplier of media URL lifetimes (0.001 makes one hour 3.6 s). Default 1. */
  timeScale?: number;
  /** Faults of the media host. Default none. */
  mediaFaults?: MediaFaults;
  /** Bytes added to every media file (files stay valid), for realistic sizes. Default 0. */
  mediaPadBytes?: number;
  /** Seed of results and faults; the same seed and requests give the same answers. Default 0. */
  seed?: number;
  /** The epoch the world starts in (see world.ts; `POST /_sandbox/epoch` advances it). Default 0. */
  epoch?: number;
  /** What changes per epoch: content 0.1, rank 0.05, churn 0.05 by default (see world.ts). */
  epochShares?: Partial<EpochShares>;
  /** Scraped content: `short` sentences or real-sized `corpus` pages. Default `short`. */
  content?: ContentMode;
  /** Clock in epoch ms, for tests. Default `Date.now`. */
  now?: () => number;
}

export const DEFAULT_KEY: SandboxKey = { key: 'fc-sandbox', team: 'sandbox', credits: 1_000_000 };
export const DEFAULT_CLI_PORT = 3002;

/** Options with every default applied. */
export interface ResolvedOptions {
  port: number;
  host: string;
  keys: SandboxKey[];
  rateLimitPerMinute: number | undefined;
  rateLimitMode: RateLimitMode;
  rateLimitWindowMs: number;
  maxConcurrency: number | undefined;
  retryAfterHeader: boolean;
  hostedRules: boolean;
  faults: Required<FaultRates>;
  apiTrickleBytesPerSecond: number | undefined;
  inflatedCredits: number | undefined;
  latency: LatencyRange | undefined;
  timeScale: number;
  mediaFaults: ResolvedMediaFaults;
  mediaPadBytes: number;
  seed: number;
  world: ResolvedWorld;
  now: () => number;
}

export function resolveOptions(options: SandboxOptions = {}): ResolvedOptions {
  const tpTeams = new Set(options.threatProtectionTeams ?? []);
  const keys = (options.keys?.length ? options.keys : [DEFAULT_KEY]).map((k) => ({
    ...k,
    threatProtection: Boolean(k.threatProtection) || tpTeams.has(k.team),
  }));
  const timeScale = options.timeScale ?? 1;
  if (!(timeScale > 0)) throw new UsageError(`time scale must be > 0, got ${timeScale}`);
  const rateLimitWindowMs = options.rateLimitWindowMs ?? DEFAULT_WINDOW_MS;
  if (!(Number.isSafeInteger(rateLimitWindowMs) && rateLimitWindowMs > 0)) {
    throw new UsageError(
      `rate limit window must be a positive whole number of ms, got ${rateLimitWindowMs}`,
    );
  }
  return {
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    keys,
    rateLimitPerMinute: options.rateLimitPerMinute,
    rateLimitMode: options.rateLimitMode ?? 'fixed',
    rateLimitWindowMs,
    maxConcurrency: options.maxConcurrency,
    retryAfterHeader: options.retryAfterHeader ?? false,
    hostedRules: options.hostedRules ?? false,
    faults: normaliseFaults(options.faults),
    apiTrickleBytesPerSecond: options.apiTrickleBytesPerSecond,
    inflatedCredits: options.inflatedCredits,
    latency: options.latency,
    timeScale,
    mediaFaults: normaliseMediaFaults(options.mediaFaults),
    mediaPadBytes: options.mediaPadBytes ?? 0,
    seed: options.seed ?? 0,
    world: resolveWorld(options),
    now: options.now ?? Date.now,
  };
}

export function normaliseFaults(faults: FaultRates = {}): Required<FaultRates> {
  const out = {
    timeout408: faults.timeout408 ?? 0,
    error500: faults.error500 ?? 0,
    malformed: faults.malformed ?? 0,
    drop: faults.drop ?? 0,
  };
  // Named as --faults writes them (408=..., 500=...).
  const flagName: Record<string, string> = { timeout408: '408', error500: '500' };
  for (const [name, p] of Object.entries(out)) {
    if (!(p >= 0 && p <= 1)) {
      throw new UsageError(`fault probability ${flagName[name] ?? name} must be in 0..1`);
    }
  }
  if (out.timeout408 + out.error500 + out.malformed + out.drop > 1) {
    throw new UsageError('fault probabilities must add up to at most 1');
  }
  return out;
}

export interface ResolvedMediaFaults {
  tamper: number;
  error503: number;
  bytesPerSecond: number | null;
}

export function normaliseMediaFaults(faults: MediaFaults = {}): ResolvedMediaFaults {
  const out = {
    tamper: faults.tamper ?? 0,
    error503: faults.error503 ?? 0,
    bytesPerSecond: faults.bytesPerSecond ?? null,
  };
  for (const name of ['tamper', 'error503'] as const) {
    if (!(out[name] >= 0 && out[name] <= 1))
      throw new UsageError(`media fault ${name} must be in 0..1`);
  }
  if (out.bytesPerSecond !== null && !(out.bytesPerSecond > 0)) {
    throw new UsageError('media bytesPerSecond must be > 0');
  }
  return out;
}

/** `KEY:TEAM:CREDITS[:tp][,...]`; a 4th field `tp` gives the team threat protection. */
export function parseKeys(text: string): SandboxKey[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((item) => {
      const [key, team, credits, flag, ...rest] = item.split(':');
      const n = Number(credits);
      if (!key || !team || !Number.isSafeInteger(n) || n < 0 || rest.length > 0) {
        throw new UsageError(`--keys: expected KEY:TEAM:CREDITS[:tp], got "${item}"`);
      }
      if (flag !== undefined && flag !== 'tp') {
        throw new UsageError(`--keys: the 4th field may only be "tp", got "${flag}"`);
      }
      return { key, team, credits: n, threatProtection: flag === 'tp' };
    });
}

const FAULT_NAMES: Record<string, keyof FaultRates> = {
  '408': 'timeout408',
  '500': 'error500',
  malformed: 'malformed',
  drop: 'drop',
};

/** `408=0.05,500=0.02,malformed=0.01,drop=0.01` */
export function parseFaults(text: string): Required<FaultRates> {
  const faults: FaultRates = {};
  for (const item of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, value] = item.split('=');
    const field = name === undefined ? undefined : FAULT_NAMES[name];
    const p = Number(value);
    if (!field || value === undefined || value === '' || Number.isNaN(p)) {
      throw new UsageError(
        `--faults: expected NAME=PROBABILITY with NAME in 408, 500, malformed, drop; got "${item}"`,
      );
    }
    faults[field] = p;
  }
  return normaliseFaults(faults);
}

/** `20` (fixed) or `10-50` (uniform) milliseconds. */
export function parseLatency(text: string): LatencyRange {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(?:-\s*(\d+(?:\.\d+)?)\s*)?$/.exec(text);
  if (!m) throw new UsageError(`--latency: expected MS or MIN-MAX, got "${text}"`);
  const minMs = Number(m[1]);
  const maxMs = m[2] === undefined ? minMs : Number(m[2]);
  if (maxMs < minMs) throw new UsageError(`--latency: MAX must be >= MIN, got "${text}"`);
  return { minMs, maxMs };
}

/** `fixed`, `sliding` or `token-bucket`. */
export function parseRateLimitMode(text: string): RateLimitMode {
  const mode = RATE_LIMIT_MODES.find((m) => m === text.trim());
  if (!mode) {
    throw new UsageError(
      `--rate-limit-mode: expected one of ${RATE_LIMIT_MODES.join(', ')}, got "${text}"`,
    );
  }
  return mode;
}

/** A non-negative integer flag value. */
export function parseCount(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new UsageError(`${flag}: expected a non-negative integer, got "${text}"`);
  }
  return n;
}

/** A positive number flag value. */
export function parsePositive(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) {
    throw new UsageError(`${flag}: expected a positive number, got "${text}"`);
  }
  return n;
}
