/**
 * The Redis watch (src/cli/redis-watch.ts) on the shared Redis, under a prefix of the test's own:
 * its marker deleted while Redis answers is said once; a marker that outlives its time to live
 * is kept, not taken for lost data.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { type RedisWatch, watchRedis } from '../../src/cli/redis-watch.ts';
import { deletePrefix, freshPrefix, REDIS_URL } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

let watch: RedisWatch | undefined;
let prefix = '';
afterEach(async () => {
  await watch?.close();
  await deletePrefix(prefix);
});

function events() {
  const seen: string[] = [];
  return {
    seen,
    lost: () => seen.push('lost'),
    back: (kept: boolean) => seen.push(kept ? 'back' : 'back-empty'),
    emptied: () => seen.push('emptied'),
  };
}

describe('the Redis watch', () => {
  it('says once that its keys were deleted while Redis answered', async () => {
    prefix = freshPrefix();
    const e = events();
    watch = await watchRedis(REDIS_URL, prefix, e, { checkMs: 50 });
    // A fixed duration: nothing is said over several checks (50 ms apart) while the keys stay.
    await sleep(200);
    expect(e.seen).toEqual([]);
    expect(await deletePrefix(prefix)).toBe(1);
    await waitFor('the watch to see its keys deleted', () => e.seen.length > 0);
    // A fixed duration: said once, not again at the checks that follow.
    await sleep(300);
    expect(e.seen).toEqual(['emptied']);
  });

  it('keeps its marker past the time to live it was set with', async () => {
    prefix = freshPrefix();
    const e = events();
    watch = await watchRedis(REDIS_URL, prefix, e, { checkMs: 100, markerTtlS: 1 });
    // A fixed duration: the test is about the marker's time to live (1 s) passing.
    await sleep(2500);
    expect(e.seen).toEqual([]);
  });
});
