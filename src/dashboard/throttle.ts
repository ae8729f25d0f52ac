/**
 * Slowing password guesses at the dashboard, per client address. Pure: the clock is given.
 *
 * The first `freeFailures` wrong passwords from an address cost nothing (typos). Each one after
 * them locks the address out, for a delay that doubles from `firstDelayMs` up to `maxDelayMs`
 * (defaults: 5 free, then 1 s, 2 s, 4 s, ... 5 min: about 12 guesses an hour). While locked out,
 * a request with credentials is answered 429 without checking them: a guess made then is
 * neither tried nor counted. A right password clears the address's count.
 *
 * An address is forgotten `forgetAfterMs` after its last failure (default 1 h), and at most
 * `maxClients` are kept (the least recently failed go first), so the table stays small whoever
 * knocks. IPv6 clients count per /64 (one host usually holds a whole /64); IPv4-mapped IPv6
 * addresses as their IPv4 address. Behind a proxy every client has the proxy's address.
 */
import { isIP } from 'node:net';

export interface ThrottleOptions {
  /** Wrong passwords from an address before the first lockout. Default 5. */
  freeFailures: number;
  /** The first lockout, in ms; each next one doubles. Default 1000. */
  firstDelayMs: number;
  /** The longest lockout, in ms. Default 300000 (5 min). */
  maxDelayMs: number;
  /** An address's failures are forgotten this long after its last one, in ms. Default 1 h. */
  forgetAfterMs: number;
  /** Addresses kept at most. Default 10000. */
  maxClients: number;
  /** The clock, ms since the epoch. Default Date.now. */
  now: () => number;
}

export const THROTTLE_DEFAULTS: ThrottleOptions = {
  freeFailures: 5,
  firstDelayMs: 1000,
  maxDelayMs: 300_000,
  forgetAfterMs: 3_600_000,
  maxClients: 10_000,
  now: Date.now,
};

interface ClientState {
  failures: number;
  lastFailureAt: number;
  lockedUntil: number;
}

export class FailureThrottle {
  readonly #options: ThrottleOptions;
  readonly #clients = new Map<string, ClientState>();

  constructor(options: Partial<ThrottleOptions> = {}) {
    this.#options = { ...THROTTLE_DEFAULTS, ...options };
  }

  /** How long `address` must still wait before its credentials are checked, in ms; 0: none. */
  waitMs(address: string): number {
    const state = this.#current(clientKey(address));
    return state ? Math.max(0, state.lockedUntil - this.#options.now()) : 0;
  }

  /** Records a wrong password from `address`; returns the lockout it now has, in ms (0: none). */
  failed(address: string): number {
    const { freeFailures, firstDelayMs, maxDelayMs, maxClients, now } = this.#options;
    const key = clientKey(address);
    const at = now();
    const state = this.#current(key) ?? { failures: 0, lastFailureAt: at, lockedUntil: 0 };
    state.failures += 1;
    state.lastFailureAt = at;
    const over = state.failures - freeFailures;
    const delayMs = over > 0 ? Math.min(maxDelayMs, firstDelayMs * 2 ** Math.min(over - 1, 30)) : 0;
    state.lockedUntil = at + delayMs;
    // Re-inserted: the Map's order is then least recently failed first, the ones to drop.
    this.#clients.delete(key);
    this.#clients.set(key, state);
    while (this.#clients.size > maxClients) {
      const oldest = this.#clients.keys().next().value;
      if (oldest === undefined) break;
      this.#clients.delete(oldest);
    }
    return delayMs;
  }

  /** A right password from `address`: its count starts again. */
  succeeded(address: string): void {
    this.#clients.delete(clientKey(address));
  }

  /** Addresses with failures on record (for tests and bounds). */
  get size(): number {
    return this.#clients.size;
  }

  #current(key: string): ClientState | undefined {
    const state = this.#clients.get(key);
    if (!state) return undefined;
    const at = this.#options.now();
    if (state.lockedUntil <= at && at - state.lastFailureAt >= this.#options.forgetAfterMs) {
      this.#clients.delete(key);
      return undefined;
    }
    return state;
  }
}

/** The key an address's failures count under: IPv4 as it is, IPv6 by its /64. */
export function clientKey(address: string): string {
  const bare = address.replace(/%.*$/, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (mapped) return mapped[1]!;
  if (isIP(bare) !== 6) return bare;
  const [head = '', tail] = bare.split('::');
  const first = head ? head.split(':') : [];
  const last = tail ? tail.split(':') : [];
  const groups = [
    ...first,
    ...Array<string>(Math.max(0, 8 - first.length - last.length)).fill('0'),
    ...last,
  ];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
