/**
 * The `runs` queue's processor, on the host that owns the database:
 * - `tick` jobs, made by the job schedulers of `harvest schedule apply`, start a scheduled run
 *   (or record the tick as skipped while the pipeline's previous run is still going);
 * - `notify` jobs deliver the webhook of a finished scheduled run. A failed delivery throws,
 *   so BullMQ tries it again with exponential backoff; the last failure, or one another attempt
 *   cannot fix, is an UnrecoverableError. Every attempt is recorded in SQLite; none of this
 *   touches the run itself.
 */
import { type Job, UnrecoverableError } from 'bullmq';
import type { z } from 'zod';
import type { SendResult } from '../../src/notify/send.ts';
import {
  type NotifyJobData,
  NotifyJobDataSchema,
  type TickJobData,
  TickJobDataSchema,
} from '../../src/queue/job-data.ts';
import { RUNS_JOBS } from '../../src/queue/names.ts';
import type { TickRow } from '../../src/store/index.ts';

export interface RunsProcessorDeps {
  /** Handles the tick due at `dueAt` (ms since the epoch). */
  tick(data: TickJobData, dueAt: number): Promise<TickRow>;
  /** One delivery attempt; `final` when the queue will not try again. */
  notify(data: NotifyJobData, final: boolean): Promise<SendResult>;
}

/** When a scheduler's job was due: BullMQ keeps it as `prevMillis`. */
export function dueAtOf(job: Job): number {
  return job.opts.prevMillis ?? job.timestamp + (job.opts.delay ?? 0);
}

/**
 * When a tick job's tick was due: the time it carries (a missed tick queued by `schedule
 * apply`), else its scheduler's. What the processor and the failed handler both record under.
 */
export function tickDueAt(job: Job, data: { dueAt?: number | undefined }): number {
  return data.dueAt ?? dueAtOf(job);
}

function parse<S extends z.ZodType>(schema: S, job: Job): z.infer<S> {
  const parsed = schema.safeParse(job.data);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new UnrecoverableError(`runs job ${job.id} carries bad data: ${issues.join('; ')}`);
  }
  return parsed.data;
}

export function createRunsProcessor(deps: RunsProcessorDeps) {
  return async function processRuns(job: Job): Promise<unknown> {
    switch (job.name) {
      case RUNS_JOBS.tick: {
        const data = parse(TickJobDataSchema, job);
        const row = await deps.tick(data, tickDueAt(job, data));
        return { outcome: row.outcome, runId: row.runId, reason: row.reason };
      }
      case RUNS_JOBS.notify: {
        const final = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        const result = await deps.notify(parse(NotifyJobDataSchema, job), final);
        if (result.state === 'pending') throw new Error(result.error ?? 'not delivered');
        if (result.state === 'failed')
          throw new UnrecoverableError(result.error ?? 'not delivered');
        return result;
      }
      default:
        throw new UnrecoverableError(`unknown job "${job.name}" on the runs queue`);
    }
  };
}
