/**
 * A fed run's page of jobs and its cursor's move (src/run/feed/page.ts), on real Redis: they
 * happen together or not at all, so a feeder that lost its lease, or whose run was resumed or
 * stopped meanwhile, adds nothing, and one that dies cannot leave its cursor behind its jobs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { afterEach, expect, it } from 'vitest';
import { searchJob } from '../../src/queue/enqueue.ts';
import { harvestKeys, QUEUES } from '../../src/queue/names.ts';
import { FeedPages } from '../../src/run/feed/page.ts';
import { FeedState } from '../../src/run/feed/state.ts';
import { testRedis } from '../helpers/redis.ts';

const undos: (() => unknown)[] = [];
afterEach(async () => {
  for (const undo of undos.splice(0).reverse()) await undo();
});

const entry = { after: '', maxAttempts: 5, since: 1 };

function setup() {
  const { prefix, redis } = testRedis((undo) => undos.push(undo));
  const keys = harvestKeys(prefix);
  const queue = new Queue(QUEUES.search, { connection: redis, prefix });
  undos.push(() => queue.close());
  const pages = new FeedPages(redis, { name: QUEUES.search, prefix }, keys);
  undos.push(() => pages.close());
  const jobs = (...keys: string[]) =>
    keys.map((taskKey) =>
      searchJob({
        runId: 'run1',
        taskKey,
        request: { query: `q ${taskKey}` },
        maxAttempts: 5,
        estimateMaxCredits: 2,
      }),
    );
  const queued = async () => (await queue.getJobs(['waiting'])).map((j) => j.id).sort();
  return { feed: new FeedState(redis, keys), pages, jobs, queued };
}

it('adds a page and moves the cursor together, and neither without the lease or on a changed entry', async () => {
  const { feed, pages, jobs, queued } = setup();
  await feed.register('run1', entry);
  const [stale] = await feed.all();
  const next = { ...entry, after: 'k2' };

  // Another process holds the lease: nothing is added, the cursor stays.
  await feed.hold('other', 5000);
  expect(await pages.addAndAdvance('a', stale!, jobs('k1', 'k2'), next)).toBe('not-leader');
  expect(await queued()).toEqual([]);
  await feed.release('other');

  // A resume rewrote the entry since it was read: nothing is added.
  await feed.hold('a', 5000);
  await feed.register('run1', { ...entry, since: 2 });
  expect(await pages.addAndAdvance('a', stale!, jobs('k1', 'k2'), next)).toBe('changed');
  expect(await queued()).toEqual([]);
  expect(await feed.get('run1')).toEqual({ ...entry, since: 2 });

  const [fresh] = await feed.all();
  const moved = { ...entry, since: 2, after: 'k2' };
  expect(await pages.addAndAdvance('a', fresh!, jobs('k1', 'k2'), moved)).toBe('moved');
  expect(await queued()).toEqual(['run1.k1', 'run1.k2'].sort());
  expect(await feed.get('run1')).toEqual(moved);

  // The last page ends the run's feeding.
  const [last] = await feed.all();
  expect(await pages.addAndAdvance('a', last!, jobs('k3'), undefined)).toBe('moved');
  expect(await queued()).toHaveLength(3);
  expect(await feed.get('run1')).toBeUndefined();
});

it("another run's entry written meanwhile does not cost the page: the transaction is tried again", async () => {
  const { feed, pages, jobs, queued } = setup();
  await feed.register('run1', entry);
  await feed.hold('a', 5000);
  // Other runs' entries change all the time, every few milliseconds (starts, resumes, stops).
  let writing = true;
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      await feed.register(`run${2 + (i % 5)}`, { ...entry, since: i });
      await sleep(5); // fixed: a write every few milliseconds
    }
  })();
  const results = [];
  for (let page = 0; page < 20; page++) {
    const current = (await feed.all()).find((e) => e.runId === 'run1')!;
    const keys = [`k${page}a`, `k${page}b`];
    results.push(
      await pages.addAndAdvance('a', current, jobs(...keys), { ...entry, after: keys[1]! }),
    );
  }
  writing = false;
  await writer;
  expect(results).toEqual(Array(20).fill('moved'));
  expect(await queued()).toHaveLength(40);
  expect((await feed.get('run1'))?.after).toBe('k19b');
});
