/** Schedules in tests: applied to the harness's runs queue as `harvest schedule apply` does. */
import type { Queue } from 'bullmq';
import { loadValidPipeline } from '../../src/run/start.ts';
import { appliedPipeline, planScheduleChanges } from '../../src/schedule/plan.ts';
import {
  applyScheduleActions,
  openRunsQueue,
  readSchedules,
} from '../../src/schedule/schedulers.ts';
import type { TickRow } from '../../src/store/index.ts';
import type { Harness } from './harness.ts';
import { waitFor } from './wait.ts';

/** The runs queue on the harness's Redis prefix, as harvest opens it; the caller closes it. */
export function runsQueue(h: Harness): Queue {
  return openRunsQueue(h.runtime.redis, h.settings.queuePrefix);
}

export async function applySchedule(queue: Queue, file: string): Promise<void> {
  const { pipeline, text } = await loadValidPipeline(file);
  const actions = planScheduleChanges(
    [appliedPipeline(file, pipeline, text)],
    await readSchedules(queue),
    { prune: false },
  );
  await applyScheduleActions(queue, actions);
}

/** Waits until `done(ticks)` holds for the pipeline's ticks (oldest first), or fails. */
export async function waitForTicks(
  h: Harness,
  pipeline: string,
  done: (ticks: TickRow[]) => boolean,
  timeoutMs = 20_000,
): Promise<TickRow[]> {
  const ticks = () => h.runtime.store.ticks.list(pipeline, 1000).reverse();
  return waitFor(`the ticks of ${pipeline} to get there`, ticks, {
    until: done,
    timeoutMs,
    intervalMs: 100,
  });
}
