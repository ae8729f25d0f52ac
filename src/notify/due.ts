/**
 * Who notices that a scheduled run has finished: nobody is told. The runs role looks every few
 * seconds for runs that have finished while their notification is pending (one indexed query)
 * and enqueues a delivery job for each, with a job id per run, so a job that exists already is
 * not added twice. Since both the finished run and the pending notification are in SQLite, a
 * process that dies anywhere (a store writer that just finished the run, a worker mid-delivery,
 * a Redis that lost its jobs) delays a notification, and never loses it.
 */
import type { Queue } from 'bullmq';
import { type NotifyJobData, NotifyJobDataSchema } from '../queue/job-data.ts';
import { notifyJobId, RUNS_JOBS } from '../queue/names.ts';
import type { Store } from '../store/index.ts';

export interface DeliveryPolicy {
  /** Attempts of one delivery job. */
  attempts: number;
  /** First retry delay, doubled at each attempt, in ms. */
  backoffMs: number;
}

/** Enqueues the deliveries that are due; returns how many were due. */
export async function enqueueDueNotifications(
  store: Store,
  queue: Queue,
  policy: DeliveryPolicy,
): Promise<number> {
  const due = store.notifications.due(100);
  if (due.length === 0) return 0;
  // A delivery job that failed for good without recording why (it threw: a locked database,
  // say) stays in the failed set under the run's job id, and a job added under that id would be
  // ignored: the notification, still pending, would never be tried again. It is taken out.
  const states = await Promise.all(due.map((runId) => queue.getJobState(notifyJobId(runId))));
  for (const [i, state] of states.entries()) {
    if (state === 'failed') await queue.remove(notifyJobId(due[i]!));
  }
  await queue.addBulk(
    due.map((runId) => {
      const data: NotifyJobData = NotifyJobDataSchema.parse({ runId });
      return {
        name: RUNS_JOBS.notify,
        data,
        opts: {
          jobId: notifyJobId(runId),
          attempts: policy.attempts,
          backoff: { type: 'exponential', delay: policy.backoffMs },
          removeOnComplete: true,
          removeOnFail: { age: 7 * 24 * 3600 },
        },
      };
    }),
  );
  return due.length;
}
