/**
 * The `search` queue's processor: one job per task. Stateless: it calls the API, hands a
 * record of the call (and, on success, the results) to the store sink (the `store` queue, or
 * the database of a process that owns it), and never opens SQLite. What to do after a failure is decided by src/queue/backoff.ts; this file only
 * translates that decision into BullMQ terms.
 */
import { type Job, RateLimitError, UnrecoverableError } from 'bullmq';
import type { ApiClient, ApiResponse } from '../src/api/index.ts';
import { ApiError } from '../src/api/index.ts';
import type { SearchRequest, SearchResponse } from '../src/contract/index.ts';
import { newCallId } from '../src/ids.ts';
import type { Logger } from '../src/log.ts';
import { decideRetry } from '../src/queue/backoff.ts';
import type { Budget } from '../src/queue/budget.ts';
import type { InflightJournal } from '../src/queue/inflight.ts';
import { SearchJobEnvelopeSchema } from '../src/queue/job-data.ts';
import { parseSearchJobId } from '../src/queue/names.ts';
import type { RateController } from '../src/queue/rate-controller.ts';
import type { StoreSink } from '../src/queue/store-sink.ts';
import type { CallEvent, ResultItem, StoreEvent, TaskEvent } from '../src/store/events.ts';

export interface SearchDeps {
  client: ApiClient;
  sink: StoreSink;
  budget: Budget;
  inflight: InflightJournal;
  rate: RateController;
  /** Pauses the search queue with a reason a human can act on (401, 402). */
  pause(code: string, reason: string): Promise<void>;
  workerId: string;
  logger: Logger;
  random?: () => number;
}

/** Carries the backoff delay to BullMQ's custom backoff strategy (see src/queue/pool.ts). */
export class RetryLaterError extends Error {
  readonly delayMs: number;
  constructor(message: string, delayMs: number, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'RetryLaterError';
    this.delayMs = delayMs;
  }
}

/** Marks errors this processor already recorded, so the pool does not record them twice. */
export const RECORDED = Symbol('harvest.recorded');

export function createSearchProcessor(deps: SearchDeps) {
  const random = deps.random ?? Math.random;
  // Not awaited: the record is durable already; an entry left behind is reaped as LOST and
  // deduplicated by callId in the store, so a failure here only costs a log line.
  const endJournal = (callId: string) =>
    void deps.inflight
      .end(callId)
      .catch((error: unknown) => deps.logger.warn({ err: error, callId }, 'journal end failed'));
  return async function processSearch(job: Job): Promise<{ creditsUsed: number }> {
    const parsed = SearchJobEnvelopeSchema.safeParse(job.data);
    if (!parsed.success) return lostData(job, parsed.error.issues.length);
    const data = parsed.data;
    const { runId, taskKey } = data;
    const attempt = job.attemptsMade + 1;
    const task = (status: TaskEvent['status'], extra: Partial<TaskEvent> = {}): TaskEvent => ({
      type: 'task',
      runId,
      taskKey,
      status,
      attempts: attempt,
      at: Date.now(),
      ...extra,
    });

    const reserved = data.estimateMaxCredits;
    if (data.maxCredits !== undefined) {
      const ok = await deps.budget.reserve(runId, reserved, data.maxCredits);
      if (!ok) {
        const message = `budget of ${data.maxCredits} credits would be exceeded (task may cost up to ${reserved})`;
        await deps.sink.push([
          task('failed', { errorCode: 'BUDGET_EXCEEDED', errorMessage: message }),
        ]);
        throw marked(new UnrecoverableError(message));
      }
    }

    // Time-ordered (UUIDv7), so the calls table's key index grows at its end instead of at
    // random pages: that alone makes each store transaction about a third cheaper.
    const callId = newCallId();
    const startedAt = Date.now();
    await deps.inflight.begin({
      callId,
      runId,
      taskKey,
      attempt,
      startedAt,
      workerId: deps.workerId,
    });

    let response: ApiResponse<SearchResponse>;
    try {
      response = await deps.client.search(data.request as SearchRequest);
    } catch (error) {
      const call = failedCall(error, { callId, runId, taskKey, attempt, startedAt });
      // A call of unknown cost (no answer, or an unreadable 2xx) keeps its worst case reserved.
      const spent = call.creditsUsed ?? reserved;
      if (data.maxCredits !== undefined) await deps.budget.settle(runId, reserved, spent);
      return handleFailure(error, call, job, data.maxAttempts, task);
    }

    const { body } = response;
    const call: CallEvent = {
      type: 'call',
      callId,
      runId,
      taskKey,
      attempt,
      startedAt,
      durationMs: response.durationMs,
      status: response.status,
      outcome: 'ok',
      searchId: body.id,
      warning: body.warning ?? null,
      creditsUsed: body.creditsUsed,
    };
    const results: StoreEvent = {
      type: 'results',
      runId,
      taskKey,
      callId,
      searchId: body.id,
      fetchedAt: Date.now(),
      items: resultItems(body.data),
    };
    await deps.sink.push([call, results, task('done')]);
    endJournal(callId);
    if (data.maxCredits !== undefined) await deps.budget.settle(runId, reserved, body.creditsUsed);
    deps.rate.onSuccess();
    return { creditsUsed: body.creditsUsed };
  };

  /**
   * A job whose data is gone (Redis lost keys under a running worker) cannot be run, and
   * retrying it cannot help. Its id still names the task: the task says why it is waiting,
   * and a resume re-issues it from SQLite.
   */
  async function lostData(job: Job, issues: number): Promise<never> {
    const ids = job.id ? parseSearchJobId(job.id) : undefined;
    const message =
      `the data of job ${job.id} was lost or is malformed (${issues} problems); ` +
      `\`harvest run --resume ${ids?.runId ?? '<run>'}\` re-issues the task`;
    deps.logger.error({ jobId: job.id }, message);
    if (ids) {
      await deps.sink.push([
        {
          type: 'task',
          ...ids,
          status: 'queued',
          attempts: job.attemptsMade,
          errorCode: 'JOB_DATA_LOST',
          errorMessage: message,
          at: Date.now(),
        },
      ]);
    }
    throw marked(new UnrecoverableError(message));
  }

  async function handleFailure(
    error: unknown,
    call: CallEvent,
    job: Job,
    maxAttempts: number,
    task: (status: TaskEvent['status'], extra?: Partial<TaskEvent>) => TaskEvent,
  ): Promise<never> {
    const decision = decideRetry({
      error,
      attemptsMade: job.attemptsMade + 1,
      maxAttempts,
      random,
      runId: call.runId,
    });
    const errorCode = call.outcome;
    const errorMessage = call.errorMessage ?? null;
    const record = async (events: StoreEvent[]) => {
      await deps.sink.push(events);
      endJournal(call.callId);
    };
    switch (decision.kind) {
      case 'rate-limit': {
        await record([call]);
        await deps.rate.onRateLimited(decision.waitMs, errorMessage ?? '');
        // Back to waiting without spending an attempt; every worker waits out the limit.
        throw new RateLimitError();
      }
      case 'retry': {
        await record([call, task('retrying', { errorCode, errorMessage })]);
        throw marked(
          new RetryLaterError(errorMessage ?? errorCode, decision.delayMs, { cause: error }),
        );
      }
      case 'pause': {
        await record([call, task('queued', { errorCode, errorMessage: decision.reason })]);
        await deps.pause(decision.code, decision.reason);
        // The job goes back to the (now paused) queue, attempt unspent, and runs after resume.
        throw new RateLimitError();
      }
      case 'fail': {
        await record([
          call,
          task('failed', { errorCode: decision.code, errorMessage: decision.message }),
        ]);
        throw marked(new UnrecoverableError(`${decision.code}: ${decision.message}`));
      }
    }
  }
}

function marked<E extends Error>(error: E): E {
  (error as E & { [RECORDED]?: true })[RECORDED] = true;
  return error;
}

export function isRecorded(error: unknown): boolean {
  return typeof error === 'object' && error !== null && RECORDED in error;
}

function failedCall(
  error: unknown,
  base: { callId: string; runId: string; taskKey: string; attempt: number; startedAt: number },
): CallEvent {
  const api = error instanceof ApiError ? error : undefined;
  return {
    type: 'call',
    ...base,
    durationMs: api?.durationMs ?? Date.now() - base.startedAt,
    status: api?.status ?? null,
    outcome: api?.code ?? 'NETWORK',
    errorMessage: error instanceof Error ? error.message : String(error),
    // Error answers cost nothing; a 2xx whose body could not be read was billed for an amount
    // harvest cannot know, and no answer at all may or may not have been billed.
    creditsUsed: api?.status !== undefined && api.status >= 400 ? 0 : null,
    retryAfterMs: api?.retryAfterMs ?? null,
  };
}

const SOURCES = ['web', 'news', 'images'] as const;

function resultItems(data: Record<string, unknown>): ResultItem[] {
  const items: ResultItem[] = [];
  for (const source of SOURCES) {
    const list = data[source];
    if (!Array.isArray(list)) continue;
    list.forEach((item, position) => {
      items.push({ source, position, item: item as Record<string, unknown> });
    });
  }
  return items;
}
