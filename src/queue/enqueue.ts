/** Adding search jobs: idempotent (job id = run id + task key), in bulk, validated first. */
import type { Queue } from 'bullmq';
import { type SearchJobData, SearchJobEnvelopeSchema } from './job-data.ts';
import { searchJobId } from './names.ts';

/** Jobs per addBulk call: large enough to amortise round trips, small enough to stay responsive. */
const CHUNK = 1000;

export async function enqueueSearches(
  queue: Queue,
  jobs: Iterable<SearchJobData>,
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
    // Requests come from a plan that validated them against the contract; check the envelope.
    SearchJobEnvelopeSchema.parse(data);
    chunk.push({
      name: 'search',
      data,
      opts: {
        jobId: searchJobId(data.runId, data.taskKey),
        attempts: data.maxAttempts,
        backoff: { type: 'harvest' },
        removeOnComplete: true,
        removeOnFail: { age: 7 * 24 * 3600 },
      },
    });
    if (chunk.length >= CHUNK) await flush();
  }
  await flush();
  return count;
}
