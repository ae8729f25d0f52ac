/**
 * The record of one API call, successful or not, as the store takes it (a `call` event). Every
 * caller of the API builds its records here, so a re-issued search is recorded exactly as a
 * task's search is, but for its `purpose`.
 */
import { ApiError, type ApiResponse } from '../api/index.ts';
import type { SearchResponse } from '../contract/index.ts';
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

export function okCallEvent(
  { body, status, durationMs }: ApiResponse<SearchResponse>,
  base: CallBase,
): CallEvent {
  return {
    type: 'call',
    ...base,
    durationMs,
    status,
    outcome: 'ok',
    searchId: body.id,
    warning: body.warning ?? null,
    creditsUsed: body.creditsUsed,
  };
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
