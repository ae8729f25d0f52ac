/**
 * The job schedulers of the `runs` queue (BullMQ `upsertJobScheduler`): one per scheduled
 * pipeline, named after it. Each makes a `tick` job at every cron time, carrying the pipeline's
 * text and hash, so whichever worker has the `runs` role starts the run.
 */
import { type ConnectionOptions, Queue } from 'bullmq';
import { type TickJobData, TickJobDataSchema } from '../queue/job-data.ts';
import { missedTickJobId, QUEUES, RUNS_JOBS } from '../queue/names.ts';
import type { DesiredSchedule, ExistingSchedule, ScheduleAction } from './plan.ts';
import { scheduleRepeatStrategy } from './times.ts';

/**
 * BullMQ settings of every queue and worker of the runs queue: the next tick of a scheduler is
 * computed wherever a tick is taken or a scheduler upserted, with harvest's repeat strategy.
 */
export const RUNS_QUEUE_SETTINGS = { repeatStrategy: scheduleRepeatStrategy };

/** The runs queue, as every process that schedules or takes ticks opens it. */
export function openRunsQueue(connection: ConnectionOptions, prefix: string): Queue {
  return new Queue(QUEUES.runs, { connection, prefix, settings: RUNS_QUEUE_SETTINGS });
}

export interface ScheduleInfo extends ExistingSchedule {
  /** When its next tick is due, ms since the epoch (in the past while no worker takes it). */
  next: number | null;
  /** The template's pipeline text and file (undefined for a scheduler harvest did not make). */
  yamlText: string | undefined;
  file: string | undefined;
  /**
   * Due times of its missed ticks waiting for a worker with the runs role: ticks that were due
   * when a changed file was applied, kept as jobs of their own (oldest first).
   */
  missed: number[];
}

/** Options of every tick job: a failed tick (a locked database, say) is tried again. */
const TICK_JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 5000 },
  removeOnComplete: { count: 100 },
  removeOnFail: { count: 100 },
};

/** Every scheduler of the queue, the next due first. */
export async function readSchedules(queue: Queue): Promise<ScheduleInfo[]> {
  const all = await queue.getJobSchedulers(0, -1, true);
  const missed = await missedTicks(queue);
  return all.map((s) => {
    const data = TickJobDataSchema.safeParse(s.template?.data);
    return {
      name: s.key,
      cron: s.pattern,
      tz: s.tz,
      hash: data.success ? data.data.pipelineHash : undefined,
      next: s.next ?? null,
      yamlText: data.success ? data.data.yamlText : undefined,
      file: data.success ? data.data.file : undefined,
      missed: missed.get(s.key) ?? [],
    };
  });
}

/** Missed ticks that wait for a worker, by pipeline: their due times, oldest first. */
async function missedTicks(queue: Queue): Promise<Map<string, number[]>> {
  const byName = new Map<string, number[]>();
  const jobs = await queue.getJobs(['waiting', 'delayed', 'prioritized']);
  for (const job of jobs) {
    if (!job?.id?.startsWith('missed-tick-')) continue;
    const data = TickJobDataSchema.safeParse(job.data);
    if (!data.success || data.data.dueAt === undefined) continue;
    const list = byName.get(data.data.pipelineName) ?? [];
    list.push(data.data.dueAt);
    byName.set(data.data.pipelineName, list);
  }
  for (const list of byName.values()) list.sort((a, b) => a - b);
  return byName;
}

async function upsert(queue: Queue, s: DesiredSchedule): Promise<void> {
  const data: TickJobData = {
    pipelineName: s.name,
    yamlText: s.yamlText,
    pipelineHash: s.hash,
    file: s.file,
  };
  // Upserting drops the scheduler's pending tick and schedules the next one after now: a tick
  // already due (no worker with the runs role took it yet) would be lost. Missed ticks run once,
  // so it is queued again, with the pipeline as applied now, under an id of its own.
  const before = await queue.getJobScheduler(s.name);
  const missed = before?.next != null && before.next <= Date.now() ? before.next : undefined;
  await queue.upsertJobScheduler(
    s.name,
    { pattern: s.cron, tz: s.tz },
    { name: RUNS_JOBS.tick, data, opts: TICK_JOB_OPTIONS },
  );
  if (missed !== undefined) {
    await queue.add(
      RUNS_JOBS.tick,
      { ...data, dueAt: missed },
      { ...TICK_JOB_OPTIONS, jobId: missedTickJobId(s.name, missed) },
    );
  }
}

/** Carries out the actions of `planScheduleChanges`, in order. */
export async function applyScheduleActions(
  queue: Queue,
  actions: readonly ScheduleAction[],
): Promise<void> {
  for (const a of actions) {
    if (a.kind === 'create' || a.kind === 'update') await upsert(queue, a.schedule);
    else if (a.kind === 'remove') await queue.removeJobScheduler(a.name);
  }
}

/** Removes the pipeline's scheduler and its next tick; false when there was none. */
export function removeSchedule(queue: Queue, name: string): Promise<boolean> {
  return queue.removeJobScheduler(name);
}
