/**
 * Fresh URLs for media whose URL expired or was refused: the search that produced it is called
 * again (through the one API-call path, jobs/search/call.ts: a recorded call of purpose
 * `media-reissue`, with its rate-limit turn, its credits, its budget reservation and its
 * in-flight journal entry, like any call), and the fresh answer's URLs replace those of the
 * task's pending media, matched by the result's own `url` (collect.ts).
 *
 * | situation                                              | outcome                           |
 * |--------------------------------------------------------|-----------------------------------|
 * | the item has had `maxReissues` fresh URLs already      | ended: expired (expiry) or failed (refusal), with the host's reason |
 * | another job of this process is re-issuing the task     | wait for it; its fresh URL serves, and counts |
 * | no API client here, or the run's budget would be passed | ended: failed, REISSUE_UNAVAILABLE / BUDGET_EXCEEDED |
 * | the run was cancelled or interrupted                   | ended: failed, RUN_STOPPED        |
 * | the call is rate limited, times out, 5xx               | wait (the job retries later)      |
 * | the call fails otherwise (400, 401, 402, ...)          | ended: failed, REISSUE_FAILED     |
 * | the answer lacks the result, or its media              | ended: failed, RESULT_GONE / MEDIA_GONE |
 * | the answer has it                                      | refreshed                         |
 *
 * One call serves every pending item of the task: items that asked for a fresh URL while it was
 * under way, and items whose deadline has passed, count it as one of their re-issues (and end
 * when its answer lacks them); the others just get a later deadline. An item that asked once
 * the answer was in counts it too, so an item refused again and again cannot take fresh URLs
 * from other items' calls past its limit.
 *
 * A caller that can still use the old URL (its deadline has passed, its expiry not yet) asks
 * with `keepOnRefusal`: when no fresh URL may be had at all (no API key, budget, stopped run),
 * the item is not ended but told so (`unavailable`), to try the old URL while it lasts.
 *
 * Over 300 lines: one state machine (a task's flight, the items that asked for it, those that
 * asked late), kept whole so it reads against the table above.
 */

import type { Decision } from '../../src/api/backoff.ts';
import type { ApiClient } from '../../src/api/index.ts';
import { estimateSearchCredits, type SearchRequest } from '../../src/contract/index.ts';
import type { MediaEvent } from '../../src/events/media.ts';
import type { StoreEvent } from '../../src/events/store.ts';
import type { Logger } from '../../src/log.ts';
import { type AnswerData, matchFresh } from '../../src/media/collect.ts';
import { mediaDeadline } from '../../src/media/expiry.ts';
import type { Budget } from '../../src/queue/budget.ts';
import type { InflightJournal } from '../../src/queue/inflight.ts';
import type { RateController } from '../../src/queue/rate/controller.ts';
import type { Store } from '../../src/store/index.ts';
import type { MediaRow } from '../../src/store/media.ts';
import { type CallDeps, type CallOutcome, type CallRecords, callApi } from '../search/call.ts';

/** When the shared rate limit holds every search, a re-issue is tried again after this, in ms. */
const RATE_HOLD_RETRY_MS = 1000;

export interface ReissueDeps {
  store: Store;
  /** Absent on a pool without an API key: media then cannot be re-issued. */
  client: ApiClient | undefined;
  /** Makes the re-issue calls' records durable. */
  record(events: StoreEvent[]): Promise<void>;
  /** Commits media events (fresh URLs, rows ended); resolves once committed. */
  write(events: MediaEvent[]): Promise<void>;
  budget: Budget;
  inflight: InflightJournal;
  /**
   * The shared rate limit of search calls (src/queue/rate/controller.ts): a re-issue takes a
   * turn like any search, and what its 429 says holds every worker. Absent: not counted.
   */
  rate?: Pick<RateController, 'beforeCall' | 'onRateLimited' | 'onSuccess'>;
  workerId: string;
  /** Fresh URLs per media item, at most. */
  maxReissues: number;
  /** Why a run was stopped (cancelled, interrupted), if it was: no search is called for it. */
  stopReason?: (runId: string) => string | undefined;
  log: Logger;
  now?: () => number;
  random?: () => number;
}

/** Why the item needs a fresh URL. */
export interface ReissueCause {
  /** The host's code (`ExpiredToken`, `SignatureDoesNotMatch`) or harvest's (`DEADLINE_PASSED`). */
  code: string;
  message: string;
  /** The URL expired (rather than being refused for another reason). */
  expired: boolean;
}

export type ReissueOutcome =
  | { kind: 'refreshed' }
  | { kind: 'ended' }
  | { kind: 'wait'; delayMs: number; reason: string }
  /** No fresh URL may be had; only with `keepOnRefusal` (the item is left pending). */
  | { kind: 'unavailable'; code: string; message: string };

export interface RefreshOptions {
  /** When no fresh URL may be had, leave the item pending and say so (`unavailable`). */
  keepOnRefusal?: boolean;
}

/** Why the answer has no fresh URL for an item (collect.ts `matchFresh`). */
interface Unmatched {
  reason: string;
  message: string;
}

/** What one re-issue call gave, once its fresh URLs are committed. */
type FlightResult =
  | {
      kind: 'answered';
      /** Items that asked for it (or were due): refreshed, or ended; committed. */
      outcomes: Map<number, ReissueOutcome>;
      /** Other items the answer has no fresh URL for (nothing committed for them). */
      unmatched: Map<number, Unmatched>;
    }
  | { kind: 'wait'; delayMs: number; reason: string }
  | { kind: 'refused'; code: string; message: string };

/** A re-issue under way: its call and commit, and the items that asked for it. */
interface Flight {
  result: Promise<FlightResult>;
  askedBy: Set<number>;
}

/** What the call itself gave. */
type CallResult =
  | { kind: 'answer'; data: AnswerData; receivedAt: number }
  | Exclude<FlightResult, { kind: 'answered' }>;

export class Reissuer {
  readonly #d: ReissueDeps;
  readonly #now: () => number;
  /** Re-issues under way in this process, by task: the call and the commit of its fresh URLs. */
  readonly #flights = new Map<string, Flight>();
  /** The API-call path's pieces; absent without an API client. */
  readonly #calls: CallDeps | undefined;

  constructor(deps: ReissueDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
    this.#calls = deps.client && {
      client: deps.client,
      record: deps.record,
      budget: deps.budget,
      inflight: deps.inflight,
      ...(deps.rate ? { rate: deps.rate } : {}),
      workerId: deps.workerId,
      logger: deps.log,
      ...(deps.random ? { random: deps.random } : {}),
    };
  }

  /** Gets `row` a fresh URL, or ends it saying why not. */
  async refresh(
    row: MediaRow,
    cause: ReissueCause,
    options: RefreshOptions = {},
  ): Promise<ReissueOutcome> {
    const { store } = this.#d;
    // Another job may have got this row a fresh URL since `row` was read.
    const current = store.media.get(row.id);
    if (current?.status !== 'pending') return { kind: 'ended' };
    if (current.sourceUrl !== row.sourceUrl && current.deadlineAt > this.#now()) {
      return { kind: 'refreshed' };
    }
    if (current.reissues >= this.#d.maxReissues) return this.#giveUp(current, cause);
    const flightKey = `${row.runId}\n${row.taskKey}`;
    let flight = this.#flights.get(flightKey);
    if (!flight) {
      const askedBy = new Set<number>();
      const result = this.#fly(current, askedBy).finally(() => this.#flights.delete(flightKey));
      flight = { result, askedBy };
      this.#flights.set(flightKey, flight);
    }
    flight.askedBy.add(current.id);
    const result = await flight.result;
    if (result.kind === 'wait') return result;
    if (result.kind === 'refused') {
      if (options.keepOnRefusal) {
        return { kind: 'unavailable', code: result.code, message: result.message };
      }
      await this.#d.write([this.#ended(current, 'failed', result.code, result.message)]);
      return { kind: 'ended' };
    }
    return (
      result.outcomes.get(current.id) ?? this.#askedLate(current, result.unmatched, cause, options)
    );
  }

  /**
   * The outcome for an item that asked once the call's answer had been applied: its fresh URL,
   * committed without counting, now counts; an answer that lacks it ends it; an item the
   * answer left as it was asks again.
   */
  async #askedLate(
    asked: MediaRow,
    unmatched: Map<number, Unmatched>,
    cause: ReissueCause,
    options: RefreshOptions,
  ): Promise<ReissueOutcome> {
    const missing = unmatched.get(asked.id);
    if (missing) {
      await this.#d.write([this.#ended(asked, 'failed', missing.reason, missing.message)]);
      return { kind: 'ended' };
    }
    const now = this.#d.store.media.get(asked.id);
    if (now?.status !== 'pending') return { kind: 'ended' };
    if (now.sourceUrl === asked.sourceUrl) return this.refresh(now, cause, options);
    await this.#d.write([
      {
        type: 'media-refreshed',
        mediaId: now.id,
        sourceUrl: now.sourceUrl,
        issuedAt: now.issuedAt,
        expiresAt: now.expiresAt ?? now.deadlineAt,
        deadlineAt: now.deadlineAt,
        countReissue: true,
        at: this.#now(),
      },
    ]);
    return { kind: 'refreshed' };
  }

  /** The call, then the commit of what its answer says of the task's pending items. */
  async #fly(row: MediaRow, askedBy: ReadonlySet<number>): Promise<FlightResult> {
    const result = await this.#call(row);
    if (result.kind !== 'answer') return result;
    return { kind: 'answered', ...(await this.#apply(row, result, askedBy)) };
  }

  #ended(row: MediaRow, status: 'failed' | 'expired', code: string, message: string): MediaEvent {
    return {
      type: 'media-ended',
      mediaId: row.id,
      status,
      code,
      message,
      attempted: false,
      at: this.#now(),
    };
  }

  /** Ends `row`: it may not have another fresh URL. */
  async #giveUp(row: MediaRow, cause: ReissueCause): Promise<ReissueOutcome> {
    const n = row.reissues;
    const why =
      n === 0
        ? 'no fresh URL may be fetched (HARVEST_MEDIA_MAX_REISSUES is 0)'
        : `after ${n} fresh URL${n === 1 ? '' : 's'}, the most allowed`;
    await this.#d.write([
      this.#ended(
        row,
        cause.expired ? 'expired' : 'failed',
        cause.code,
        `${cause.message} (${why})`,
      ),
    ]);
    return { kind: 'ended' };
  }

  /**
   * The fresh answer's URLs for the task's pending items: the outcome for each item that asked
   * for it or is due (counted as one of its re-issues), and why the answer lacks any other.
   */
  async #apply(
    row: MediaRow,
    answer: { data: AnswerData; receivedAt: number },
    askedBy: ReadonlySet<number>,
  ): Promise<{ outcomes: Map<number, ReissueOutcome>; unmatched: Map<number, Unmatched> }> {
    const { store } = this.#d;
    const config = store.media.config(row.runId);
    const now = this.#now();
    const events: MediaEvent[] = [];
    const outcomes = new Map<number, ReissueOutcome>();
    const unmatched = new Map<number, Unmatched>();
    for (const item of store.media.pendingOfTask(row.runId, row.taskKey)) {
      const needed = askedBy.has(item.id) || item.deadlineAt <= now;
      const match = matchFresh(answer.data, item);
      if (!match.found) {
        if (needed) {
          events.push(this.#ended(item, 'failed', match.reason, match.message));
          outcomes.set(item.id, { kind: 'ended' });
        } else unmatched.set(item.id, { reason: match.reason, message: match.message });
        continue;
      }
      const d = mediaDeadline({
        url: match.url,
        kind: item.kind,
        receivedAt: answer.receivedAt,
        marginMaxMs: config?.marginMaxMs ?? 0,
      });
      events.push({
        type: 'media-refreshed',
        mediaId: item.id,
        sourceUrl: match.url,
        issuedAt: d.issuedAt,
        expiresAt: d.expiresAt,
        deadlineAt: d.deadlineAt,
        countReissue: needed,
        at: now,
      });
      if (needed) outcomes.set(item.id, { kind: 'refreshed' });
    }
    await this.#d.write(events);
    return { outcomes, unmatched };
  }

  /** Calls the task's search again, through the one API-call path (jobs/search/call.ts). */
  async #call(row: MediaRow): Promise<CallResult> {
    const calls = this.#calls;
    if (!calls) {
      return {
        kind: 'refused',
        code: 'REISSUE_UNAVAILABLE',
        message: 'the URL needs a fresh one, but this worker has no API key to re-issue its search',
      };
    }
    const stopped = this.#d.stopReason?.(row.runId);
    if (stopped) {
      return {
        kind: 'refused',
        code: 'RUN_STOPPED',
        message: `the URL needs a fresh one, but the run was ${stopped}: no search is called for it`,
      };
    }
    const { store } = this.#d;
    const task = store.tasks.get(row.runId, row.taskKey);
    if (!task) {
      return {
        kind: 'refused',
        code: 'REISSUE_UNAVAILABLE',
        message: `task ${row.taskKey} of run ${row.runId} is gone`,
      };
    }
    const request = task.request as SearchRequest;
    const maxCredits = store.runs.get(row.runId)?.maxCredits ?? null;
    const outcome = await callApi(
      calls,
      {
        runId: row.runId,
        taskKey: row.taskKey,
        attempt: row.reissues + 1,
        purpose: 'media-reissue',
        request,
        budget:
          maxCredits === null
            ? undefined
            : { credits: estimateSearchCredits(request).max, maxCredits },
        // One try here: a call to retry makes the media job wait, and its next run calls again.
        attemptsMade: 1,
        maxAttempts: 2,
      },
      REISSUE_RECORDS,
    );
    return this.#result(outcome, row, maxCredits);
  }

  /** What the re-issue's call gave, for its media items. */
  #result(outcome: CallOutcome, row: MediaRow, maxCredits: number | null): CallResult {
    switch (outcome.kind) {
      // A turn of the shared rate limit, as every search takes: over it, the item waits.
      case 'held':
        return {
          kind: 'wait',
          delayMs: RATE_HOLD_RETRY_MS,
          reason: 'the shared rate limit holds every search for now',
        };
      case 'over-budget':
        return {
          kind: 'refused',
          code: 'BUDGET_EXCEEDED',
          message: `re-issuing the search for a fresh URL would pass the run's budget of ${maxCredits} credits`,
        };
      case 'answered': {
        const { body } = outcome.response;
        this.#d.log.info(
          { runId: row.runId, taskKey: row.taskKey, credits: body.creditsUsed },
          'search re-issued for fresh media URLs',
        );
        return { kind: 'answer', data: body.data as AnswerData, receivedAt: outcome.receivedAt };
      }
      case 'failed':
        return failure(outcome.error, outcome.decision);
    }
  }
}

/** A re-issue records its call alone: its media items' events follow once it is answered. */
const REISSUE_RECORDS: CallRecords = {
  answered: (call) => [call],
  failed: (call) => [call],
};

/**
 * What a failed re-issue means for its items: a 429 (learnt by the shared rate limit already),
 * a timeout or a 5xx waits; any other failure (400, 401, 402, ...) refuses them. A 401 or 402
 * pauses no queue here: the search that meets it next does.
 */
function failure(error: unknown, decision: Decision): CallResult {
  const message = error instanceof Error ? error.message : String(error);
  if (decision.kind === 'rate-limit') {
    return { kind: 'wait', delayMs: decision.waitMs, reason: message };
  }
  if (decision.kind === 'retry')
    return { kind: 'wait', delayMs: decision.delayMs, reason: message };
  const why = decision.kind === 'pause' ? decision.reason : decision.message;
  return {
    kind: 'refused',
    code: 'REISSUE_FAILED',
    message: `re-issuing the search failed: ${why}`,
  };
}
