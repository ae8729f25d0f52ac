/**
 * Sandbox options and the parsing of their command-line spellings. `startSandbox(options)` and
 * `harvest sandbox --flags` take the same settings; the flag parsers here are pure and throw
 * `UsageError` on bad input.
 */
import { UsageError } from '../errors.ts';

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
  /** Requests per minute per team (fixed one-minute windows). Default: no limit. */
  rateLimitPerMinute?: number;
  /** Requests in flight per team; one more gets a 429. Default: no limit. */
  maxConcurrency?: number;
  /** Also send a `Retry-After` header (seconds) on 429. Default false, like the hosted service. */
  retryAfterHeader?: boolean;
  /**
   * Also refuse (400) what the hosted service refuses beyond the reference: see
   * `hostedServiceWarnings` in src/contract/hosted-service.ts. Default false: the reference only.
   */
  hostedRules?: boolean;
  /** Injected fault probabilities. Default none. */
  faults?: FaultRates;
  /** Simulated latency of API requests in ms. Default none. */
  latency?: LatencyRange;
  /** Multiplier of media URL lifetimes (0.001 makes one hour 3.6 s). Default 1. */
  timeScale?: number;
  /** Seed of results and faults; the same seed and requests give the same answers. Default 0. */
  seed?: number;
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
  maxConcurrency: number | undefined;
  retryAfterHeader: boolean;
  hostedRules: boolean;
  faults: Required<FaultRates>;
  latency: LatencyRange | undefined;
  timeScale: number;
  seed: number;
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
  return {
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    keys,
    rateLimitPerMinute: options.rateLimitPerMinute,
    maxConcurrency: options.maxConcurrency,
    retryAfterHeader: options.retryAfterHeader ?? false,
    hostedRules: options.hostedRules ?? false,
    faults: normaliseFaults(options.faults),
    latency: options.latency,
    timeScale,
    seed: options.seed ?? 0,
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
  for (const [name, p] of Object.entries(out)) {
    if (!(p >= 0 && p <= 1)) throw new UsageError(`fault probability ${name} must be in 0..1`);
  }
  if (out.timeout408 + out.error500 + out.malformed + out.drop > 1) {
    throw new UsageError('fault probabilities must add up to at most 1');
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
