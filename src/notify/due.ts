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

/** Notifications read per page, and the most enqueued per call. */
const PAGE = 100;
/** Pages read per call, at most (100,000 pending notifications). */
const MAX_PAGES = 1000;

/** Enqueues the deliveries that are due and have no job yet; returns how many it enqueued. */
export async function enqueueDueNotifications(
  store: Store,
  queue: Queue,
  policy: DeliveryPolicy,
): Promise<number> {
  // Those with a delivery job under way (waiting, or delayed for its retry) are passed over:
  // read page after page, older ones whose receiver is down would hold back every later one.
  const due: string[] = [];
  let after: string | undefined;
  for (let page = 0; page < MAX_PAGES && due.length < PAGE; page++) {
    const runIds = store.notifications.due(PAGE, after);
    if (runIds.length === 0) break;
    after = runIds.at(-1);
    const states = await Promise.all(runIds.map((runId) => queue.getJobState(notifyJobId(runId))));
    for (const [i, state] of states.entries()) {
      const runId = runIds[i]!;
      // A delivery job that failed for good without recording why (it threw: a locked
      // database, say) stays in the failed set under the run's job id, and a job added under
      // that id would be ignored: the notification would never be tried again. It is taken out.
      if (state === 'failed' || state === 'completed') await queue.remove(notifyJobId(runId));
      if (state === 'failed' || state === 'completed' || state === 'unknown') due.push(runId);
    }
    if (runIds.length < PAGE) break;
  }
  if (due.length === 0) return 0;
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
