/**
 * The record of one API call, successful or not, as the store takes it (a `call` event). Every
 * caller of the API builds its records here, so a re-issued search is recorded exactly as a
 * task's search is, but for its `purpose`.
 */
import { ApiError, type ApiResponse } from '../api/index.ts';
import {
  estimateSearchCredits,
  pdfPagesUnbounded,
  type SearchRequest,
  type SearchResponse,
} from '../contract/index.ts';
import type { CallEvent, CallPurpose } from './store.ts';

export interface CallBase {
  callId: string;
  runId: string;
  taskKey: string;
  attempt: number;
  startedAt: number;
  /** Omitted for a task's search. */
  purpose?: CallPurpose;
}

/** Default of HARVEST_CREDITS_ANOMALY_FACTOR. */
export const DEFAULT_CREDITS_ANOMALY_FACTOR = 10;

/** What an answer's `creditsUsed` is checked against: see `okCallEvent`. */
export interface CreditsCheck {
  /** The most the request could cost (`mostCredits`); null: not foreseeable, not checked. */
  maxCredits: number | null;
  /** `creditsUsed` above `maxCredits` times this is implausible. */
  factor: number;
}

/**
 * The most a search with `request` could cost by the credit rules; null when that has no
 * foreseeable bound (it asks for PDFs whose pages are not bounded).
 */
export function mostCredits(request: SearchRequest): number | null {
  return pdfPagesUnbounded(request) ? null : estimateSearchCredits(request).max;
}

/**
 * The record of an answered call. With `check`, an implausible `creditsUsed` (above the request's
 * most possible cost times the factor) is kept as billed and flagged (`creditsAnomaly`).
 */
export function okCallEvent(
  { body, status, durationMs }: ApiResponse<SearchResponse>,
  base: CallBase,
  check?: CreditsCheck,
): CallEvent {
  const event: CallEvent = {
    type: 'call',
    ...base,
    durationMs,
    status,
    outcome: 'ok',
    searchId: body.id,
    warning: body.warning ?? null,
    creditsUsed: body.creditsUsed,
  };
  if (check && check.maxCredits !== null) {
    event.creditsMax = check.maxCredits;
    if (body.creditsUsed > check.maxCredits * check.factor) event.creditsAnomaly = true;
  }
  return event;
}

/**
 * The credits a recorded call counts against its run's budget: what it cost, but for an
 * implausible `creditsUsed` (`creditsAnomaly`), the most its request could cost. Such an answer
 * does not stop the run's other tasks by itself; the report and `status` flag it. Null: the
 * cost is unknown.
 */
export function budgetCredits(
  call: Pick<CallEvent, 'creditsUsed' | 'creditsMax' | 'creditsAnomaly'>,
): number | null {
  if (call.creditsAnomaly === true && typeof call.creditsMax === 'number') return call.creditsMax;
  return call.creditsUsed;
}

export function failedCallEvent(error: unknown, base: CallBase): CallEvent {
  const api = error instanceof ApiError ? error : undefined;
  return {
    type: 'call',
    ...base,
    durationMs: api?.durationMs ?? Date.now() - base.startedAt,
    status: api?.status ?? null,
    outcome: api?.code ?? 'NETWORK',
    errorMessage: error instanceof Error ? error.message : String(error),
    creditsUsed: knownCost(api),
    retryAfterMs: api?.retryAfterMs ?? null,
  };
}

/**
 * Error answers cost nothing, and neither does a request that never left this host; a 2xx
 * whose body could not be used was billed for an amount harvest cannot know, and a call that
 * got no answer may or may not have been billed.
 */
function knownCost(api: ApiError | undefined): number | null {
  if (api?.notSent) return 0;
  return api?.status !== undefined && api.status >= 400 ? 0 : null;
}
