/**
 * The media queue on real Redis and SQLite: rows become jobs once (idempotently by row id),
 * ranked so the earliest deadline runs first whatever order the rows were queued in, and the
 * shared priority anchor is set once and moved only when the queue is idle.
 */
import { Queue, Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { MEDIA_ROWS_PER_JOB, MediaEnqueuer } from '../../jobs/media/enqueue.ts';
import { ANCHOR_LEAD_MS, ANCHOR_MAX_AGE_MS, PriorityAnchor } from '../../jobs/media/priority.ts';
import { createLogger } from '../../src/log.ts';
import { createRedis } from '../../src/queue/connection.ts';
import { harvestKeys, QUEUES } from '../../src/queue/names.ts';
import { openStore } from '../../src/store/index.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { REDIS_URL, testRedis } from '../helpers/redis.ts';
import { tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../helpers/wait.ts';
import { resultsEvent, seedRun, webItem } from '../unit/store/helpers.ts';

const defer = useCleanup();
const logger = createLogger({ level: 'silent' });

function setup() {
  const { prefix, redis } = testRedis(defer);
  const connection = createRedis(REDIS_URL, 'worker');
  defer(() => connection.quit());
  const queue = new Queue(QUEUES.media, { connection, prefix });
  defer(() => queue.close());
  const tmp = tempDir('harvest-mq');
  defer(() => tmp.remove());
  const store = openStore(`${tmp.dir}/harvest.db`);
  defer(() => store.close());
  const anchor = new PriorityAnchor(redis, harvestKeys(prefix).mediaPriorityAnchor, queue);
  return { prefix, redis, connection, queue, store, anchor };
}

/** URLs that expire `inS` seconds after 2026-11-22T10:15:00Z. */
const url = (name: string, inS: number) =>
  `https://media.example/${name}?X-Goog-Date=20261122T101500Z&X-Goog-Expires=${inS}&X-Goog-Signature=x`;

describe('media queue', () => {
  it('queues each pending row once, and runs the earliest deadline first', async () => {
    const { prefix, connection, queue, store, anchor } = setup();
    const { runId } = seedRun(store, { taskCount: 1 });
    store.media.configure({
      runId,
      kinds: ['screenshot', 'audio', 'video'],
      dir: 'media',
      maxBytes: 1e6,
      marginMaxMs: 0,
    });
    // Written in the opposite order of their deadlines.
    store.applyEvents([
      resultsEvent(runId, 't0', [
        webItem(1, { screenshot: url('s1', 86_400) }),
        webItem(2, { video: url('v2', 900) }),
        webItem(3, { audio: url('a3', 300) }),
        webItem(4, { audio: url('a4', 60) }),
      ]),
    ]);
    const enqueuer = new MediaEnqueuer({ queue, table: store.media, anchor, log: logger });
    expect(await enqueuer.flush()).toBe(4);
    expect(await enqueuer.flush()).toBe(0);
    // Re-driven (a role starting, a resume): the same jobs, not new ones.
    expect(store.media.unqueuePending(runId)).toBe(4);
    expect(await enqueuer.flush()).toBe(4);
    expect(await queue.getJobCounts('prioritized', 'waiting')).toEqual({
      prioritized: 4,
      waiting: 0,
    });

    const order: number[] = [];
    const worker = new Worker(
      QUEUES.media,
      async (job) => {
        order.push(...(job.data as { mediaIds: number[] }).mediaIds);
      },
      { connection, prefix, concurrency: 1 },
    );
    defer(() => worker.close());
    await waitFor('the 4 media jobs processed', () => order.length, { until: (n) => n >= 4 });
    const deadlines = order.map((id) => store.media.get(id)!.deadlineAt);
    expect(deadlines).toEqual([...deadlines].sort((a, b) => a - b));
    expect(order.map((id) => store.media.get(id)!.kind)).toEqual([
      'audio',
      'audio',
      'video',
      'screenshot',
    ]);
  });

  it('queues rows due together in shared jobs, at most MEDIA_ROWS_PER_JOB each', async () => {
    const { queue, store, anchor } = setup();
    const { runId } = seedRun(store, { taskCount: 1 });
    store.media.configure({ runId, kinds: ['audio'], dir: 'media', maxBytes: 1e6, marginMaxMs: 0 });
    const items = Array.from({ length: MEDIA_ROWS_PER_JOB + 2 }, (_, i) =>
      webItem(i + 1, { audio: url(`a${i}`, 300) }),
    );
    store.applyEvents([resultsEvent(runId, 't0', items)]);
    const enqueuer = new MediaEnqueuer({ queue, table: store.media, anchor, log: logger });
    expect(await enqueuer.flush()).toBe(items.length);
    const jobs = await queue.getJobs(['prioritized', 'waiting']);
    const groups = jobs.map((j) => (j.data as { mediaIds: number[] }).mediaIds);
    expect(groups.map((g) => g.length).sort((a, b) => b - a)).toEqual([MEDIA_ROWS_PER_JOB, 2]);
    expect(new Set(groups.flat()).size).toBe(items.length);
    expect(store.media.unqueued(100)).toEqual([]);
  });

  it('a row grouped anew after a restart gets a job, though its group starts with a queued row', async () => {
    const { queue, store, anchor } = setup();
    const { runId } = seedRun(store, { taskCount: 2 });
    store.media.configure({ runId, kinds: ['audio'], dir: 'media', maxBytes: 1e6, marginMaxMs: 0 });
    store.applyEvents([resultsEvent(runId, 't0', [webItem(1, { audio: url('a', 300) })])]);
    const enqueuer = new MediaEnqueuer({ queue, table: store.media, anchor, log: logger });
    expect(await enqueuer.flush()).toBe(1);
    // Results stored just before the process died, never queued; then a restart re-drives all.
    store.applyEvents([resultsEvent(runId, 't1', [webItem(2, { audio: url('x', 301) })])]);
    expect(store.media.unqueuePending(runId)).toBe(1);
    expect(await enqueuer.flush()).toBe(2);
    const jobs = await queue.getJobs(['prioritized', 'waiting']);
    const queued = new Set(jobs.flatMap((j) => (j.data as { mediaIds: number[] }).mediaIds));
    for (const row of store.media.ofRun(runId))
      expect(queued.has(row.id), `row ${row.id}`).toBe(true);
  });

  it('sets the anchor once, keeps it while the queue holds jobs, moves it when old and idle', async () => {
    const { redis, prefix, queue, anchor } = setup();
    const key = harvestKeys(prefix).mediaPriorityAnchor;
    const t0 = Date.UTC(2026, 10, 22, 10);
    expect(await anchor.current(t0)).toBe(t0 - ANCHOR_LEAD_MS);
    expect(await anchor.current(t0 + 5000)).toBe(t0 - ANCHOR_LEAD_MS);
    const old = t0 + ANCHOR_MAX_AGE_MS + 1;
    await queue.add('media', { mediaId: 1 }, { priority: 5 });
    expect(await anchor.current(old)).toBe(t0 - ANCHOR_LEAD_MS);
    await queue.obliterate({ force: true });
    expect(await anchor.current(old)).toBe(old - ANCHOR_LEAD_MS);
    expect(Number(await redis.get(key))).toBe(old - ANCHOR_LEAD_MS);
  });
});
