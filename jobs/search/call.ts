/**
 * The one path of an API call: a task's search (jobs/search/processor.ts) and a media re-issue
 * (jobs/media/reissue.ts) alike. In order:
 *
 * 1. A turn of the shared rate limit, the run's budget reservation (the call's worst case) and
 *    the call's in-flight journal entry. With `keys`, all three in the turn's one round trip
 *    (src/queue/call-claim.ts); a call that waited for its turn, or a caller without `keys`,
 *    reserves and journals after the turn, on its own.
 * 2. The call.
 * 3. Its record (the call event and what the caller records with it), made durable before
 *    anything else can fail: a call the service billed is never made again because its record
 *    could not be written. What a 429 teaches is learnt while the record is written.
 * 4. The call leaves the journal and settles its budget (never throws).
 *
 * | situation                                 | outcome     | recorded, settled                     |
 * |-------------------------------------------|-------------|---------------------------------------|
 * | the shared rate limit holds every worker  | held        | nothing taken, nothing recorded       |
 * | the budget would be passed                | over-budget | nothing reserved or journaled         |
 * | the API answered                          | answered    | recorded; settled to `creditsUsed`    |
 * | the call failed                           | failed      | recorded; settled to its known cost, else its worst case; a 429 learnt; 401/402 pause (with `pause`); an unreachable API pauses, attempt unspent (with `circuit`) |
 */
import { type Decision, decideRetry } from '../../src/api/backoff.ts';
import type { ApiClient, ApiResponse } from '../../src/api/index.ts';
import type { SearchRequest, SearchResponse } from '../../src/contract/index.ts';
import {
  budgetCredits,
  type CallBase,
  DEFAULT_CREDITS_ANOMALY_FACTOR,
  failedCallEvent,
  mostCredits,
  okCallEvent,
} from '../../src/events/call.ts';
import { newCallId } from '../../src/events/ids.ts';
import type { CallEvent, CallPurpose, StoreEvent } from '../../src/events/store.ts';
import type { Logger } from '../../src/log.ts';
import { type Budget, settleRecorded } from '../../src/queue/budget.ts';
import { CLAIM, callClaim } from '../../src/queue/call-claim.ts';
import type { InflightJournal } from '../../src/queue/inflight.ts';
import type { HarvestKeys } from '../../src/queue/names.ts';
import type { RateController, RateTicket } from '../../src/queue/rate/controller.ts';
import { killPoint } from './kill-points.ts';
import type { CallCircuit } from './outage.ts';

export interface CallDeps {
  client: ApiClient;
  /** Makes events durable (committed, or in the store queue); retries until they are. */
  record(events: StoreEvent[]): Promise<void>;
  budget: Budget;
  inflight: InflightJournal;
  /**
   * Where the journal and the budget live: with them, the call's reservation and journal entry
   * are taken with its rate-limit turn, and its settle ends its entry, each in one script.
   */
  keys?: Pick<HarvestKeys, 'inflight' | 'budget' | 'reservations'>;
  /** The shared rate limit: the call takes a turn, and what its 429 says holds every worker. */
  rate?: Pick<RateController, 'beforeCall' | 'onRateLimited' | 'onSuccess'>;
  /**
   * Pauses the search queue with a reason a human can act on (401, 402). Absent (a media
   * re-issue): such a failure only fails the call's caller.
   */
  pause?(code: string, reason: string): Promise<void>;
  /**
   * The API circuit (jobs/search/outage.ts): told of answers, and asked after a failure whether
   * the API is unreachable (then the job waits, attempt unspent). Absent: every failure is the
   * call's own.
   */
  circuit?: CallCircuit;
  workerId: string;
  logger: Logger;
  random?: () => number;
  /**
   * An answer whose `creditsUsed` passes its request's most possible cost times this is flagged
   * as an anomaly (HARVEST_CREDITS_ANOMALY_FACTOR). Default 10.
   */
  creditsAnomalyFactor?: number;
}

export interface CallSpec {
  runId: string;
  taskKey: string;
  /** Recorded with the call: the task's attempt, or the media item's re-issue. */
  attempt: number;
  /** Omitted for a task's search. */
  purpose?: CallPurpose;
  request: SearchRequest;
  /** The run's budget, if it has one; `credits` (the call's worst case) is reserved from it. */
  budget: { credits: number; maxCredits: number } | undefined;
  /** For the retry decision (src/api/backoff.ts): attempts used, this one included. */
  attemptsMade: number;
  /** For the retry decision: attempts allowed in all. */
  maxAttempts: number;
  /**
   * A task's search: the hash of its job, marked done (inflight.ts DONE_FIELD) as an answered
   * call leaves the journal, so the job, back from a worker that died, ends without calling.
   */
  doneJobKey?: string;
}

/** What a caller records with its call; the call event comes first. */
export interface CallRecords {
  answered(
    call: CallEvent,
    response: ApiResponse<SearchResponse>,
    receivedAt: number,
  ): StoreEvent[];
  failed(call: CallEvent, decision: Decision): StoreEvent[];
}

export type CallOutcome =
  | { kind: 'held' }
  | { kind: 'over-budget' }
  | { kind: 'answered'; response: ApiResponse<SearchResponse>; receivedAt: number }
  | { kind: 'failed'; error: unknown; decision: Decision };

const HELD: CallOutcome = { kind: 'held' };
const OVER_BUDGET: CallOutcome = { kind: 'over-budget' };
/** The ticket of a call without a rate controller: nothing claimed with a turn. */
const UNCOUNTED: RateTicket = { version: 0, claim: CLAIM.notRun };

/** Makes the call `spec` describes, recording it with what `records` adds. */
export async function callApi(
  deps: CallDeps,
  spec: CallSpec,
  records: CallRecords,
): Promise<CallOutcome> {
  // Time-ordered (UUIDv7), so the calls table's key index grows at its end.
  const base: CallBase = {
    callId: newCallId(),
    runId: spec.runId,
    taskKey: spec.taskKey,
    attempt: spec.attempt,
    startedAt: Date.now(),
  };
  if (spec.purpose !== undefined) base.purpose = spec.purpose;
  const ticket = await takeTurn(deps, spec, base);
  if (ticket === 'held') return HELD;
  if (ticket === 'over-budget') return OVER_BUDGET;
  killPoint('journaled');
  let response: ApiResponse<SearchResponse>;
  try {
    response = await deps.client.search(spec.request);
  } catch (error) {
    killPoint('answer-read');
    return failedCall(deps, spec, records, error, failedCallEvent(error, base), ticket);
  }
  killPoint('answer-read');
  deps.circuit?.answered(response.status);
  const receivedAt = Date.now();
  const call = okCallEvent(response, base, {
    maxCredits: mostCredits(spec.request),
    factor: deps.creditsAnomalyFactor ?? DEFAULT_CREDITS_ANOMALY_FACTOR,
  });
  await deps.record(records.answered(call, response, receivedAt));
  killPoint('record-handed-over');
  // An implausible creditsUsed counts as the request's most possible cost (budgetCredits).
  await endRecorded(deps, spec, base.callId, budgetCredits(call) ?? 0, spec.doneJobKey);
  killPoint('journal-cleared');
  deps.rate?.onSuccess();
  return { kind: 'answered', response, receivedAt };
}

/**
 * The call's rate-limit turn, budget reservation and journal entry; its ticket once it holds
 * all three, or why it may not go (then it holds none of them).
 */
async function takeTurn(
  deps: CallDeps,
  spec: CallSpec,
  base: CallBase,
): Promise<RateTicket | 'held' | 'over-budget'> {
  const claim = deps.keys
    ? callClaim(deps.keys, { ...base, workerId: deps.workerId }, spec.budget)
    : undefined;
  const ticket = deps.rate ? await deps.rate.beforeCall(claim) : UNCOUNTED;
  // Over the learned rate limit: every worker holds.
  if (!ticket) return 'held';
  if (ticket.claim === CLAIM.overBudget) return 'over-budget';
  if (ticket.claim === CLAIM.taken) {
    killPoint('claimed');
    return ticket;
  }
  // The call waited for its turn (or nothing was claimed with it): it reserves and journals
  // now, as it goes.
  base.startedAt = Date.now();
  const { budget } = spec;
  if (
    budget &&
    !(await deps.budget.reserve(spec.runId, base.callId, budget.credits, budget.maxCredits))
  ) {
    return 'over-budget';
  }
  killPoint('claimed');
  await deps.inflight.begin({ ...base, workerId: deps.workerId });
  return ticket;
}

/** Records a failed call and what its caller records with it, then says what comes next. */
async function failedCall(
  deps: CallDeps,
  spec: CallSpec,
  records: CallRecords,
  error: unknown,
  call: CallEvent,
  ticket: RateTicket,
): Promise<CallOutcome> {
  const retry = decideRetry({
    error,
    attemptsMade: spec.attemptsMade,
    maxAttempts: spec.maxAttempts,
    random: deps.random ?? Math.random,
    runId: spec.runId,
  });
  // An unreachable API is no task's failure: the job waits for it, attempt unspent.
  const decision = deps.circuit ? await deps.circuit.judge(error, call, retry) : retry;
  // Learnt while the record is written: calls starting meanwhile meet the same 429. Every
  // worker waits out the limit.
  const learning =
    decision.kind === 'rate-limit' && deps.rate
      ? deps.rate.onRateLimited(decision.waitMs, call.errorMessage ?? '', ticket)
      : undefined;
  learning?.catch(() => {}); // awaited once the record is durable
  await deps.record(records.failed(call, decision));
  killPoint('record-handed-over');
  // A call of unknown cost (no answer, or an unreadable 2xx) keeps its worst case reserved.
  const spent = call.creditsUsed ?? spec.budget?.credits ?? 0;
  await endRecorded(deps, spec, call.callId, spent, undefined);
  killPoint('journal-cleared');
  // From here on Redis failing must not change the outcome: the call is recorded, and an error
  // of its own would spend an attempt (and could fail the task) for a 429 or a 402.
  try {
    await learning;
    if (decision.kind === 'pause') await deps.pause?.(decision.code, decision.reason);
  } catch (redisError) {
    deps.logger.warn(
      { err: redisError, callId: call.callId, decision: decision.kind, purpose: spec.purpose },
      'could not share what a failed call said with the other workers',
    );
  }
  return { kind: 'failed', error, decision };
}

/**
 * The call's record is durable: it leaves the journal and settles its budget; with
 * `doneJobKey`, its job is marked done in the same script. Never throws (Redis failing here
 * must not fail a caller whose call is recorded): an entry left behind is reaped as LOST and
 * deduplicated by callId in the store.
 */
async function endRecorded(
  deps: CallDeps,
  spec: CallSpec,
  callId: string,
  spent: number,
  doneJobKey: string | undefined,
): Promise<void> {
  const { budget } = spec;
  if (budget && deps.keys) {
    // The entry leaves the journal in the settle's script: a reservation is never left behind
    // without the entry that lets a dead worker's be found.
    await settleRecorded(deps.budget, deps.logger, spec.runId, callId, spent, {
      journal: deps.keys.inflight,
      doneJob: doneJobKey,
    });
    return;
  }
  const warn = (error: unknown) => deps.logger.warn({ err: error, callId }, 'journal end failed');
  if (doneJobKey) await deps.inflight.endDone(callId, doneJobKey).catch(warn);
  // Not awaited: the record is durable already.
  else void deps.inflight.end(callId).catch(warn);
  if (budget) await settleRecorded(deps.budget, deps.logger, spec.runId, callId, spent);
}
