/**
 * What a failed call says of the API host as a whole, pure: the rules of the API circuit
 * (src/queue/circuit.ts). An outage pauses the search queue instead of spending the attempts of
 * every task that meets it.
 *
 * | failure                                                        | class         |
 * |----------------------------------------------------------------|---------------|
 * | no connection: refused, DNS, unreachable, connect timeout, TLS | `unreachable` (an outage unless others were answered meanwhile) |
 * | 5xx, 408, the client's timeout, a connection lost mid-answer   | `flaky` (an outage once `threshold` of them from `minTasks` tasks follow each other) |
 * | any other HTTP answer (2xx, 4xx, 429), any other failure       | `other` (the service is up, or the call's own trouble) |
 */
import { NetworkError, ServerError, TimeoutError } from './errors.ts';

export type FailureClass = 'unreachable' | 'flaky' | 'other';

/** TLS failures: the host answered, but not as the API can be trusted. Treated as no connection. */
const TLS_CODES = new Set([
  'EPROTO',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_NOT_YET_VALID',
]);

/** The class of a failed call's error (see the table above). */
export function failureClass(error: unknown): FailureClass {
  if (error instanceof NetworkError) {
    return error.notSent || isTlsFailure(error) ? 'unreachable' : 'flaky';
  }
  if (error instanceof TimeoutError || error instanceof ServerError) return 'flaky';
  // An unusable or oversized answer, a refused request: calling again would not help.
  return 'other';
}

function isTlsFailure(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const record = current as { code?: unknown; errors?: unknown; cause?: unknown };
    const code = typeof record.code === 'string' ? record.code : '';
    if (TLS_CODES.has(code) || /^ERR_(TLS|SSL)_/.test(code)) return true;
    current =
      Array.isArray(record.errors) && record.errors.length > 0 ? record.errors[0] : record.cause;
  }
  return false;
}

/** True for an HTTP status that says the service is up and working (not 5xx, not 408). */
export function isHealthyStatus(status: number): boolean {
  return status < 500 && status !== 408;
}

export interface ProbeBackoff {
  /** Wait before the first probe, in ms. */
  baseMs: number;
  /** Longest wait between two probes, in ms. */
  maxMs: number;
}

export const DEFAULT_PROBE_BASE_MS = 1000;
export const DEFAULT_PROBE_MAX_MS = 180_000;

/**
 * Wait before probe number `probes + 1`, after `probes` failed ones: `baseMs * 2^probes`, capped
 * at `maxMs`, then 80 to 100 % of it so pools do not probe in step. Pure.
 */
export function probeDelayMs(probes: number, backoff: ProbeBackoff, random: () => number): number {
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, Math.min(probes, 30)));
  const share = 0.8 + 0.2 * Math.min(1, Math.max(0, random()));
  return Math.max(1, Math.round(ceiling * share));
}

/** An open circuit, as `harvest status` and the progress line show it. */
export interface OutageView {
  /** When the circuit opened, ms since the epoch. */
  since: number;
  /** When the next probe is due, ms since the epoch. */
  nextProbeAt: number;
  /** The last failure's message (a call's or a probe's). */
  lastError: string;
}

/** Longest piece of the last error quoted, in characters. */
const MAX_ERROR_CHARS = 200;

/** "API unreachable since HH:MM, next probe in Ns (last error …)", in local time. Pure. */
export function describeOutage(outage: OutageView, nowMs: number): string {
  const at = new Date(outage.since);
  const hhmm = `${pad(at.getHours())}:${pad(at.getMinutes())}`;
  const inSec = Math.max(0, Math.ceil((outage.nextProbeAt - nowMs) / 1000));
  const error =
    outage.lastError.length > MAX_ERROR_CHARS
      ? `${outage.lastError.slice(0, MAX_ERROR_CHARS)}...`
      : outage.lastError;
  return `API unreachable since ${hhmm}, next probe in ${inSec}s (last error: ${error})`;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}
