/**
 * Writing a run's plan into SQLite, a batch of tasks per transaction. Every thousand tasks the
 * event loop turns (no transaction is open then), so a stop (Ctrl-C, SIGTERM) is seen while a
 * large plan is written, and planning ends there. The run's task count is set last, once every
 * task is a row: a run whose count is still 0 has an unfinished plan (every plan has a task at
 * least), which a resume, or a scheduled tick delivered again after its worker died, writes to
 * its end. Task keys are unique per run, so writing a plan again adds only the tasks it lacked.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Pipeline, planTasks, type Task } from '../pipeline/index.ts';
import type { Store } from '../store/index.ts';

/**
 * Tasks written per transaction. Each commit writes the index pages its keys touched again
 * (keys are hashes, spread over the whole index), so batches are large; a stop is looked for
 * more often (`PLAN_CHECK_TASKS`), between two tasks planned.
 */
export const PLAN_BATCH_TASKS = 20_000;
/** Tasks planned between two turns of the event loop, where a stop is seen. */
export const PLAN_CHECK_TASKS = 1000;

export interface WrittenPlan {
  /** Every task is a row, with the run's task count and estimate set. */
  complete: boolean;
  /** Tasks of the run in SQLite (all of the plan's when complete). */
  taskCount: number;
  /** Credit bounds of the tasks planned (of the whole plan when complete). */
  estimate: { min: number; max: number };
}

/** Whether the run's plan was written to its end (see the module's header). */
export function planComplete(store: Store, runId: string): boolean {
  return (store.runs.get(runId)?.taskCount ?? 0) > 0;
}

/**
 * Writes the pipeline's plan as the run's tasks, skipping those it has. Stops at the next
 * check once `signal` is aborted: the plan is then incomplete (`complete` false), and the
 * run's status is the caller's to set.
 */
export async function writePlan(
  store: Store,
  runId: string,
  pipeline: Pipeline,
  signal?: AbortSignal,
): Promise<WrittenPlan> {
  const tasks = planTasks(pipeline);
  const written = (complete: boolean): WrittenPlan => {
    const estimate = tasks.estimate();
    return {
      complete,
      // Stopped: what SQLite holds, written now or by an earlier attempt.
      taskCount: complete ? tasks.taskCount : store.tasks.counts(runId).total,
      estimate: { min: estimate.minCredits, max: estimate.maxCredits },
    };
  };
  let batch: Task[] = [];
  const writeBatch = () => {
    store.tasks.insertMany(runId, batch);
    batch = [];
  };
  for (const task of tasks) {
    batch.push(task);
    if (batch.length === PLAN_BATCH_TASKS) writeBatch();
    if (tasks.taskCount % PLAN_CHECK_TASKS !== 0) continue;
    // A signal's handler runs in this turn of the event loop. Tasks planned but not yet
    // written are dropped: a resume plans them again.
    await nextTurn();
    if (signal?.aborted) return written(false);
  }
  if (batch.length > 0) writeBatch();
  const plan = written(true);
  store.runEstimates.set(runId, {
    minCredits: plan.estimate.min,
    maxCredits: plan.estimate.max,
    tasks: plan.taskCount,
  });
  // Last: the count marks the plan complete.
  store.runs.setTaskCount(runId, plan.taskCount);
  return plan;
}
