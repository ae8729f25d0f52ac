/**
 * The `search` queue's processor: one job per task. Stateless: it makes the task's call through
 * the one API-call path (call.ts: budget, rate turn, journal, call, record) and hands the record
 * of the call (and, on success, the results) to the store sink; it never opens SQLite. What to
 * do after a failure is decided by src/api/backoff.ts and translated for BullMQ by
 * src/queue/retry.ts.
 *
 * Before the call, a job may end without one:
 *
 * | situation                                                 | the job                      |
 * |-----------------------------------------------------------|------------------------------|
 * | its data is lost or malformed                             | fails; task queued, JOB_DATA_LOST |
 * | its run was stopped                                       | dropped; nothing recorded    |
 * | back from a dead worker, its success already recorded     | ends, no call                |
 * | back from a dead worker, `maxLostCalls` calls lost        | fails, WORKER_CRASHED        |
 * | over budget, only reservations of calls in flight in the way | waits, attempt unspent    |
 * | over budget, spent credits leave no room                  | fails, BUDGET_EXCEEDED       |
 * | its run's own rate limit (`run.rateLimitPerMinute`) spent  | delayed to its turn, attempt unspent; other runs go on |
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, type Job, RateLimitError, UnrecoverableError } from 'bullmq';
import type { SearchRequest } from '../../src/contract/index.ts';
import { type SearchJobData, SearchJobEnvelopeSchema } from '../../src/queue/job-data.ts';
import { parseSearchJobId } from '../../src/queue/names.ts';
import type { RateController } from '../../src/queue/rate/controller.ts';
import { decisionError, isRecorded, overRateLimit, unrecoverable } from '../../src/queue/retry.ts';
import { type CallDeps, callApi } from './call.ts';
import { SEARCH_RECORDS, taskEvent } from './records.ts';

export interface SearchDeps extends CallDeps {
  /** Where the journal and the budget live, for a call's claim (src/queue/call-claim.ts). */
  keys: NonNullable<CallDeps['keys']>;
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
}

/** How long a task waits for calls in flight to settle the budget, in ms (with jitter). */
const BUDGET_WAIT_MS = 500;

export function createSearchProcessor(deps: SearchDeps) {
  return async function processSearch(job: Job, token?: string): Promise<{ creditsUsed: number }> {
    const parsed = SearchJobEnvelopeSchema.safeParse(job.data);
    if (!parsed.success) return lostData(deps, job, parsed.error.issues.length);
    const data = parsed.data;
    const stopped = await deps.stopReason(data.runId);
    // Nothing to record: the task stays unfinished in SQLite, and a resume enqueues it again.
    if (stopped) throw unrecoverable(`run ${data.runId} was ${stopped}; the job is dropped`);
    const attempt = job.attemptsMade + 1;
    // Only a job that came back from a dead worker pays for these reads.
    if (job.stalledCounter > 0 && job.id) {
      // Its call was recorded before the worker died: the job ends as it was going to end.
      if (await recordedBefore(deps, job, job.id, data)) return { creditsUsed: 0 };
      await refuseCrashLoop(deps, job.id, data, attempt);
    }
    // A task the budget refuses takes no turn of the rate limit (its turn would be lost to
    // every other task: a budget-stopped run would crawl through its last tasks).
    if (
      data.maxCredits !== undefined &&
      (await deps.budget.wouldExceed(data.runId, data.estimateMaxCredits, data.maxCredits))
    ) {
      await overBudget(deps, data, attempt, job, token);
    }
    const runTurn =
      data.rateLimitPerMinute && deps.rate.runs
        ? await deps.rate.runs.turn(data.runId, data.rateLimitPerMinute)
        : undefined;
    if (runTurn && !runTurn.go) return runPaced(deps, data, runTurn.waitMs, job, token);
    const outcome = await callApi(
      deps,
      {
        runId: data.runId,
        taskKey: data.taskKey,
        attempt,
        request: data.request as SearchRequest,
        budget:
          data.maxCredits === undefined
            ? undefined
            : { credits: data.estimateMaxCredits, maxCredits: data.maxCredits },
        attemptsMade: attempt,
        maxAttempts: data.maxAttempts,
        doneJobKey: job.id === undefined ? undefined : jobKeyOf(job, job.id),
      },
      SEARCH_RECORDS,
    );
    switch (outcome.kind) {
      // Over the key's learned rate limit: the job waits without spending an attempt.
      case 'held':
        if (runTurn?.go) await deps.rate.runs?.release(data.runId, runTurn.member);
        throw overRateLimit();
      case 'over-budget':
        return overBudget(deps, data, attempt, job, token);
      // Recorded; BullMQ retries, fails, or (429, 401, 402) puts it back to wait.
      case 'failed':
        throw decisionError(outcome.decision, outcome.error);
      case 'answered':
        return { creditsUsed: outcome.response.body.creditsUsed };
    }
  };
}

/**
 * Failures the processor did not record itself (a job stalled too often, a bug, Redis
 * trouble), recorded so no task ends silently. For the search workers' `failed` event.
 */
export async function recordUnexpectedFailure(
  deps: Pick<SearchDeps, 'record' | 'logger'>,
  job: Job | undefined,
  error: Error,
): Promise<void> {
  if (!job || isRecorded(error) || error instanceof RateLimitError) return;
  const data = job.data as { runId?: string; taskKey?: string };
  const ids =
    data.runId && data.taskKey
      ? { runId: data.runId, taskKey: data.taskKey }
      : job.id
        ? parseSearchJobId(job.id)
        : undefined;
  if (!ids) {
    deps.logger.error({ err: error, jobId: job.id }, 'a job harvest did not make failed');
    return;
  }
  const final = error instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
  const event = taskEvent(ids, job.attemptsMade, final ? 'failed' : 'retrying', {
    // A job whose workers stopped during it more than maxStalledCount times is failed by the
    // next worker that takes it, with BullMQ's reason in `deferredFailure`.
    errorCode: job.deferredFailure ? 'STALLED' : 'WORKER_ERROR',
    errorMessage: error.message,
  });
  deps.logger.error({ err: error, jobId: job.id }, 'search job failed outside the API call');
  await deps
    .record([event])
    .catch((e: unknown) => deps.logger.error({ err: e }, 'could not record failure'));
}

/**
 * Whether a job back from a dead worker had its call recorded already: its task's success is
 * in this pool's database, or its job is marked done (or its record waits in the store queue).
 */
async function recordedBefore(
  deps: SearchDeps,
  job: Job,
  jobId: string,
  data: SearchJobData,
): Promise<boolean> {
  return (
    deps.taskDone?.(data.runId, data.taskKey) === true ||
    (await deps.inflight.recordedDone(jobKeyOf(job, jobId)))
  );
}

/**
 * The budget refuses the task's worst case. When only the reservations of calls in flight
 * stand in the way (they settle to what their calls cost, usually far less), the task waits
 * for them: a while here, holding its slot (so the cost of waiting follows the pool's slots,
 * not the run's backlog), then back at the end of the queue, attempt unspent. When what the
 * run's calls cost already leaves no room, the task fails.
 */
async function overBudget(
  deps: SearchDeps,
  data: SearchJobData,
  attempt: number,
  job: Job,
  token: string | undefined,
): Promise<never> {
  const max = data.maxCredits ?? 0;
  const settled =
    token === undefined ? max : await deps.budget.settled(data.runId, deps.keys.inflight);
  if (token !== undefined && settled + data.estimateMaxCredits <= max) {
    await sleep(BUDGET_WAIT_MS * (0.5 + (deps.random ?? Math.random)()));
    await job.moveToDelayed(Date.now(), token);
    throw new DelayedError();
  }
  const message = `budget of ${data.maxCredits} credits would be exceeded (task may cost up to ${data.estimateMaxCredits})`;
  await deps.record([
    taskEvent(data, attempt, 'failed', { errorCode: 'BUDGET_EXCEEDED', errorMessage: message }),
  ]);
  throw unrecoverable(message);
}

/**
 * The run's own rate limit is spent: the job waits for the run's next turn (with jitter, so the
 * run's waiting jobs do not all come back at once), attempt unspent, and its slot takes another
 * job meanwhile: another run's, which this limit never holds.
 */
async function runPaced(
  deps: SearchDeps,
  data: SearchJobData,
  waitMs: number,
  job: Job,
  token: string | undefined,
): Promise<never> {
  if (token === undefined) throw overRateLimit();
  const turnMs = 60_000 / (data.rateLimitPerMinute ?? 1);
  const jitterMs = (deps.random ?? Math.random)() * Math.min(turnMs, 10_000);
  await job.moveToDelayed(Date.now() + waitMs + jitterMs, token);
  throw new DelayedError();
}

/**
 * A job whose calls keep dying with their workers (an answer that crashes the process, say)
 * is failed instead of being called, and billed, again up to BullMQ's stall limit.
 */
async function refuseCrashLoop(
  deps: SearchDeps,
  jobId: string,
  data: SearchJobData,
  attempt: number,
): Promise<void> {
  const lost = await deps.lostCalls(jobId);
  if (lost < deps.maxLostCalls) return;
  const message =
    `${lost} calls of this task were lost with workers that stopped during them; ` +
    'not calling again (`harvest run --resume RUN --retry-failed` tries once more)';
  await deps.record([
    taskEvent(data, attempt, 'failed', { errorCode: 'WORKER_CRASHED', errorMessage: message }),
  ]);
  throw unrecoverable(message);
}

/**
 * A job whose data is gone (Redis lost keys under a running worker) cannot be run, and
 * retrying it cannot help. Its id still names the task: the task says why it is waiting,
 * and a resume re-issues it from SQLite.
 */
async function lostData(deps: SearchDeps, job: Job, issues: number): Promise<never> {
  const ids = job.id ? parseSearchJobId(job.id) : undefined;
  const message =
    `the data of job ${job.id} was lost or is malformed (${issues} problems); ` +
    `\`harvest run --resume ${ids?.runId ?? '<run>'}\` re-issues the task`;
  deps.logger.error({ jobId: job.id }, message);
  if (ids) {
    await deps.record([
      taskEvent(ids, job.attemptsMade, 'queued', {
        errorCode: 'JOB_DATA_LOST',
        errorMessage: message,
      }),
    ]);
  }
  throw unrecoverable(message);
}

/** The key of a job's hash (BullMQ's `<prefix>:<queue>:<id>`). */
function jobKeyOf(job: Job, id: string): string {
  return `${job.queueQualifiedName}:${id}`;
}
