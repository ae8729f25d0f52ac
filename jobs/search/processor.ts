/**
 * The `search` queue's processor: one job per task. Stateless: it reserves the task's worst
 * case from the run's budget, journals the call, calls the API, and hands a record of the call
 * (and, on success, the results) to the store sink; it never opens SQLite. What to do after a
 * failure is decided by src/api/backoff.ts and translated for BullMQ by src/queue/retry.ts.
 *
 * Once the API has answered, the record is made durable before anything else can fail: a
 * call the service billed is never made again because its record could not be written.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, type Job } from 'bullmq';
import { decideRetry } from '../../src/api/backoff.ts';
import type { ApiClient, ApiResponse } from '../../src/api/index.ts';
import type { SearchRequest, SearchResponse } from '../../src/contract/index.ts';
import { type CallBase, failedCallEvent, okCallEvent } from '../../src/events/call.ts';
import { newCallId } from '../../src/events/ids.ts';
import type { CallEvent, ResultItem, StoreEvent, TaskEvent } from '../../src/events/store.ts';
import type { Logger } from '../../src/log.ts';
import { type Budget, settleRecorded } from '../../src/queue/budget.ts';
import { CLAIM, callClaim } from '../../src/queue/call-claim.ts';
import type { InflightJournal } from '../../src/queue/inflight.ts';
import { type SearchJobData, SearchJobEnvelopeSchema } from '../../src/queue/job-data.ts';
import { type HarvestKeys, parseSearchJobId } from '../../src/queue/names.ts';
import type { RateController, RateTicket } from '../../src/queue/rate/controller.ts';
import { decisionError, overRateLimit, unrecoverable } from '../../src/queue/retry.ts';

export interface SearchDeps {
  client: ApiClient;
  /** Makes events durable (committed, or in the store queue); retries until they are. */
  record(events: StoreEvent[]): Promise<void>;
  budget: Budget;
  inflight: InflightJournal;
  /** Where the journal and the budget live, for a call's claim (src/queue/call-claim.ts). */
  keys: Pick<HarvestKeys, 'inflight' | 'budget' | 'reservations'>;
  rate: RateController;
  /** Pauses the search queue with a reason a human can act on (401, 402). */
  pause(code: string, reason: string): Promise<void>;
  /** Calls of this job lost with workers that died during them (see the pool's reaper). */
  lostCalls(jobId: string): Promise<number>;
  /**
   * Whether the task's success is in the database already, where this pool has it: a job back
   * from a worker killed after its record was committed (before the job's mark) ends then.
   */
  taskDone?(runId: string, taskKey: string): boolean;
  /** A task whose calls were lost with this many dead workers fails instead of calling again. */
  maxLostCalls: number;
  /**
   * Why the run's user stopped it, if they did: its jobs are dropped, not run. May ask Redis
   * (a list read a moment ago may predate the run's resume).
   */
  stopReason(runId: string): string | undefined | Promise<string | undefined>;
  workerId: string;
  logger: Logger;
  random?: () => number;
}

/** How long a task waits for calls in flight to settle the budget, in ms (with jitter). */
const BUDGET_WAIT_MS = 500;

type TaskStatusEvent = (status: TaskEvent['status'], extra?: Partial<TaskEvent>) => TaskEvent;

export function createSearchProcessor(deps: SearchDeps) {
  const random = deps.random ?? Math.random;
  // Not awaited: the record is durable already; an entry left behind is reaped as LOST and
  // deduplicated by callId in the store, so a failure here only costs a log line.
  const endJournal = (callId: string) =>
    void deps.inflight
      .end(callId)
      .catch((error: unknown) => deps.logger.warn({ err: error, callId }, 'journal end failed'));

  return async function processSearch(job: Job, token?: string): Promise<{ creditsUsed: number }> {
    const parsed = SearchJobEnvelopeSchema.safeParse(job.data);
    if (!parsed.success) return lostData(job, parsed.error.issues.length);
    const data = parsed.data;
    const stopped = await deps.stopReason(data.runId);
    // Nothing to record: the task stays unfinished in SQLite, and a resume enqueues it again.
    if (stopped) throw unrecoverable(`run ${data.runId} was ${stopped}; the job is dropped`);
    const attempt = job.attemptsMade + 1;
    const task: TaskStatusEvent = (status, extra = {}) => ({
      type: 'task',
      runId: data.runId,
      taskKey: data.taskKey,
      status,
      attempts: attempt,
      at: Date.now(),
      ...extra,
    });

    // Only a job that came back from a dead worker pays for these reads.
    if (job.stalledCounter > 0 && job.id) {
      // Its call was recorded before the worker died: the job ends as it was going to end.
      if (
        deps.taskDone?.(data.runId, data.taskKey) ||
        (await deps.inflight.recordedDone(jobKeyOf(job, job.id)))
      ) {
        return { creditsUsed: 0 };
      }
      await refuseCrashLoop(job.id, task);
    }
    // A task the budget refuses already takes no turn of the rate limit (its turn would be lost
    // to every other task: a budget-stopped run would crawl through its last tasks).
    if (
      data.maxCredits !== undefined &&
      (await deps.budget.wouldExceed(data.runId, data.estimateMaxCredits, data.maxCredits))
    ) {
      await overBudget(data, task, job, token);
    }
    // Time-ordered (UUIDv7), so the calls table's key index grows at its end.
    const callId = newCallId();
    const base = {
      callId,
      runId: data.runId,
      taskKey: data.taskKey,
      attempt,
      startedAt: Date.now(),
    };
    // The rate-limit turn, and with it (when the call may go at once) the budget reservation and
    // the journal entry, in one round trip.
    const budget =
      data.maxCredits === undefined
        ? undefined
        : { credits: data.estimateMaxCredits, maxCredits: data.maxCredits };
    const claim = callClaim(deps.keys, { ...base, workerId: deps.workerId }, budget);
    const ticket = await deps.rate.beforeCall(claim);
    // Over the learned rate limit: every worker holds, and the job waits without spending an attempt.
    if (!ticket) throw overRateLimit();
    if (ticket.claim === CLAIM.overBudget) await overBudget(data, task, job, token);
    if (ticket.claim !== CLAIM.taken) {
      // The call waited for its turn: it reserves and journals now, as it goes.
      base.startedAt = Date.now();
      await reserveBudget(data, callId, task, job, token);
      await deps.inflight.begin({ ...base, workerId: deps.workerId });
    }
    let response: ApiResponse<SearchResponse>;
    try {
      response = await deps.client.search(data.request as SearchRequest);
    } catch (error) {
      return failedCall(error, failedCallEvent(error, base), job, data, task, ticket);
    }

    const { body } = response;
    await deps.record(successEvents(response, base, task));
    // The record is durable: the call leaves the journal (settling its budget) and the job is
    // marked done, in one script.
    await endRecorded(job, data, callId, body.creditsUsed, true);
    deps.rate.onSuccess();
    return { creditsUsed: body.creditsUsed };
  };

  /**
   * The call's record is durable: it leaves the journal and settles its budget; when its task
   * is `done`, its job is marked so in the same script (a job that comes back from a worker
   * killed before BullMQ heard it end then ends without calling again). Never throws (Redis
   * failing here must not fail a job whose call is recorded): an entry left behind is reaped
   * as LOST and deduplicated by callId.
   */
  async function endRecorded(
    job: Job,
    data: SearchJobData,
    callId: string,
    spent: number,
    done: boolean,
  ): Promise<void> {
    const jobKey = done && job.id !== undefined ? jobKeyOf(job, job.id) : undefined;
    if (data.maxCredits !== undefined) {
      await settleRecorded(deps.budget, deps.logger, data.runId, callId, spent, {
        journal: deps.keys.inflight,
        ...(jobKey ? { doneJob: jobKey } : {}),
      });
    } else if (jobKey) {
      await deps.inflight
        .endDone(callId, jobKey)
        .catch((error: unknown) => deps.logger.warn({ err: error, callId }, 'journal end failed'));
    } else endJournal(callId);
  }

  async function reserveBudget(
    data: SearchJobData,
    callId: string,
    task: TaskStatusEvent,
    job: Job,
    token: string | undefined,
  ): Promise<void> {
    if (data.maxCredits === undefined) return;
    const reserved = data.estimateMaxCredits;
    if (await deps.budget.reserve(data.runId, callId, reserved, data.maxCredits)) return;
    await overBudget(data, task, job, token);
  }

  /**
   * The budget refuses the task's worst case. When only the reservations of calls in flight
   * stand in the way (they settle to what their calls cost, usually far less), the task waits
   * for them: a while here, holding its slot (so the cost of waiting follows the pool's slots,
   * not the run's backlog), then back at the end of the queue, attempt unspent. When what the
   * run's calls cost already leaves no room, the task fails.
   */
  async function overBudget(
    data: SearchJobData,
    task: TaskStatusEvent,
    job: Job,
    token: string | undefined,
  ): Promise<never> {
    const max = data.maxCredits ?? 0;
    const settled =
      token === undefined ? max : await deps.budget.settled(data.runId, deps.keys.inflight);
    if (token !== undefined && settled + data.estimateMaxCredits <= max) {
      await sleep(BUDGET_WAIT_MS * (0.5 + random()));
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    const message = `budget of ${data.maxCredits} credits would be exceeded (task may cost up to ${data.estimateMaxCredits})`;
    await deps.record([task('failed', { errorCode: 'BUDGET_EXCEEDED', errorMessage: message })]);
    throw unrecoverable(message);
  }

  /**
   * A job whose calls keep dying with their workers (an answer that crashes the process, say)
   * is failed instead of being called, and billed, again up to BullMQ's stall limit.
   */
  async function refuseCrashLoop(jobId: string, task: TaskStatusEvent): Promise<void> {
    const lost = await deps.lostCalls(jobId);
    if (lost < deps.maxLostCalls) return;
    const message =
      `${lost} calls of this task were lost with workers that stopped during them; ` +
      'not calling again (`harvest run --resume RUN --retry-failed` tries once more)';
    await deps.record([task('failed', { errorCode: 'WORKER_CRASHED', errorMessage: message })]);
    throw unrecoverable(message);
  }

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
      await deps.record([
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
    throw unrecoverable(message);
  }

  /** Records a failed call and what happens to its task, then tells BullMQ. */
  async function failedCall(
    error: unknown,
    call: CallEvent,
    job: Job,
    data: SearchJobData,
    task: TaskStatusEvent,
    ticket: RateTicket,
  ): Promise<never> {
    const decision = decideRetry({
      error,
      attemptsMade: job.attemptsMade + 1,
      maxAttempts: data.maxAttempts,
      random,
      runId: call.runId,
    });
    const errorCode = call.outcome;
    const errorMessage = call.errorMessage ?? null;
    const events: StoreEvent[] = [call];
    if (decision.kind === 'retry') events.push(task('retrying', { errorCode, errorMessage }));
    if (decision.kind === 'pause')
      events.push(task('queued', { errorCode, errorMessage: decision.reason }));
    if (decision.kind === 'fail')
      events.push(task('failed', { errorCode: decision.code, errorMessage: decision.message }));
    // Learnt while the record is written: calls starting meanwhile meet the same 429. Back to
    // waiting without spending an attempt; every worker waits out the limit.
    const learning =
      decision.kind === 'rate-limit'
        ? deps.rate.onRateLimited(decision.waitMs, errorMessage ?? '', ticket)
        : undefined;
    learning?.catch(() => {}); // awaited once the record is durable
    await deps.record(events);
    // A call of unknown cost (no answer, or an unreadable 2xx) keeps its worst case reserved.
    // It leaves the journal in its settle's script: a reservation is never left behind without
    // the entry that lets a dead worker's be found.
    const spent = call.creditsUsed ?? data.estimateMaxCredits;
    await endRecorded(job, data, call.callId, spent, false);
    // From here on Redis failing must not change what the job does: the call is recorded, and
    // an error of its own would spend an attempt (and could fail the task) for a 429 or a 402.
    try {
      await learning;
      // The job goes back to the (now paused) queue, attempt unspent, and runs after resume.
      if (decision.kind === 'pause') await deps.pause(decision.code, decision.reason);
    } catch (redisError) {
      deps.logger.warn(
        { err: redisError, callId: call.callId, decision: decision.kind },
        'could not share what a failed call said with the other workers',
      );
    }
    throw decisionError(decision, error);
  }
}

/** The key of a job's hash (BullMQ's `<prefix>:<queue>:<id>`). */
function jobKeyOf(job: Job, id: string): string {
  return `${job.queueQualifiedName}:${id}`;
}

function successEvents(
  response: ApiResponse<SearchResponse>,
  base: CallBase,
  task: TaskStatusEvent,
): StoreEvent[] {
  const results: StoreEvent = {
    type: 'results',
    runId: base.runId,
    taskKey: base.taskKey,
    callId: base.callId,
    searchId: response.body.id,
    fetchedAt: Date.now(),
    items: resultItems(response.body.data),
  };
  return [okCallEvent(response, base), results, task('done')];
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
