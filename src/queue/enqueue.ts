/** Adding search jobs: idempotent (job id = run id + task key), in bulk, validated first. */
import type { Queue } from 'bullmq';
import { type SearchJobData, SearchJobEnvelopeSchema } from './job-data.ts';
import { parseSearchJobId, searchJobId } from './names.ts';
import { SEARCH_BACKOFF } from './retry.ts';

export type SearchJob = Parameters<Queue['addBulk']>[0][number] & { opts: { jobId: string } };

/** The job of one task, its envelope checked: what every way of adding search jobs adds. */
export function searchJob(data: SearchJobData): SearchJob {
  // Requests come from a plan that validated them against the contract; check the envelope.
  SearchJobEnvelopeSchema.parse(data);
  return {
    name: 'search',
    data,
    opts: {
      jobId: searchJobId(data.runId, data.taskKey),
      attempts: data.maxAttempts,
      backoff: { type: SEARCH_BACKOFF },
      removeOnComplete: true,
      // Kept for the dashboard, a week at most and never more than FAILED_KEPT: SQLite records
      // every failed task with its reason, and a run whose budget ran out fails all its fed
      // jobs at once, which kept by age alone would pile up in Redis past the queue window.
      removeOnFail: { age: 7 * 24 * 3600, count: FAILED_KEPT },
    },
  };
}

/** Failed search jobs kept in Redis at most (the newest). */
export const FAILED_KEPT = 1000;

/** Jobs per addBulk call: large enough to amortise round trips, small enough to stay responsive. */
const CHUNK = 1000;

/** Adds the jobs in chunks; stops between chunks once `signal` is aborted. */
export async function enqueueSearches(
  queue: Queue,
  jobs: Iterable<SearchJobData>,
  signal?: AbortSignal,
): Promise<number> {
  let count = 0;
  let chunk: Parameters<Queue['addBulk']>[0] = [];
  const flush = async () => {
    if (chunk.length === 0) return;
    await queue.addBulk(chunk);
    count += chunk.length;
    chunk = [];
  };
  for (const data of jobs) {
    if (signal?.aborted) return count;
    chunk.push(searchJob(data));
    if (chunk.length >= CHUNK) await flush();
  }
  await flush();
  return count;
}

/**
 * Removes the run's failed jobs from Redis. A job id stays taken while its failed job is kept,
 * so without this a resume could not re-issue a task whose job failed in a way SQLite never
 * heard of (its data lost with Redis keys, say): SQLite, not Redis, says what is unfinished.
 */
export async function removeFailedJobs(queue: Queue, runId: string): Promise<number> {
  const PAGE = 1000;
  let removed = 0;
  for (let start = 0; ; ) {
    const ids = (await queue.getRanges(['failed'], start, start + PAGE - 1)) as string[];
    let kept = 0;
    for (const id of ids) {
      if (parseSearchJobId(id)?.runId === runId) {
        await queue.remove(id);
        removed += 1;
      } else kept += 1;
    }
    if (ids.length < PAGE) return removed;
    start += kept;
  }
}
