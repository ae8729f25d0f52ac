/**
 * The feeder's Redis state (src/run/feed/state.ts) on real Redis: one lease holder at a time,
 * and a cursor that moves only for the holder and only if nobody rewrote the entry meanwhile.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { harvestKeys } from '../../src/queue/names.ts';
import { FeedState } from '../../src/run/feed/state.ts';
import { testRedis } from '../helpers/redis.ts';

const undos: (() => unknown)[] = [];
afterEach(async () => {
  for (const undo of undos.splice(0).reverse()) await undo();
});

function state(): FeedState {
  const { prefix, redis } = testRedis((undo) => undos.push(undo));
  return new FeedState(redis, harvestKeys(prefix));
}

const entry = { after: '', maxAttempts: 5, since: 1 };

describe('feed state', () => {
  it('lets one holder take the lease, renew it, and another take it once it lapses', async () => {
    const feed = state();
    expect(await feed.hold('a', 1500)).toBe(true);
    expect(await feed.hold('b', 1500)).toBe(false);
    expect(await feed.hold('a', 1500)).toBe(true);
    await sleep(1700); // fixed: past the lease's 1.5 s
    expect(await feed.hold('b', 1500)).toBe(true);
    expect(await feed.holder()).toBe('b');
    await feed.release('a');
    expect(await feed.holder()).toBe('b');
    await feed.release('b');
    expect(await feed.holder()).toBeNull();
  });

  it("hands the lease to a feeder that asks for it, at the holder's next call, and back", async () => {
    const feed = state();
    expect(await feed.hold('worker', 5000)).toBe(true);
    // The asker does not take a lease held: the holder may be mid-round.
    expect(await feed.hold('cli', 5000, { preferred: true })).toBe(false);
    expect(await feed.holder()).toBe('worker');
    // Between two rounds, the holder lets go of it...
    expect(await feed.hold('worker', 5000)).toBe(false);
    expect(await feed.holder()).toBeNull();
    // ...and only the asker takes it; a second asker waits like anyone.
    expect(await feed.hold('other', 5000)).toBe(false);
    expect(await feed.hold('cli2', 5000, { preferred: true })).toBe(false);
    expect(await feed.hold('cli', 5000, { preferred: true })).toBe(true);
    expect(await feed.hold('cli', 5000, { preferred: true })).toBe(true);
    expect(await feed.hold('worker', 5000)).toBe(false);
    // The asker gives up the lease and its ask: the next caller takes the lease.
    await feed.release('cli');
    expect(await feed.hold('worker', 5000)).toBe(true);
    expect(await feed.holder()).toBe('worker');
  });

  it('lets another feeder take the lease once an asker that died stops asking', async () => {
    const feed = state();
    expect(await feed.hold('cli', 1000, { preferred: true })).toBe(true);
    expect(await feed.hold('worker', 1000)).toBe(false);
    await sleep(1200); // fixed: past the ask's 1 s
    expect(await feed.hold('worker', 1000)).toBe(true);
  });

  it('moves a cursor only with the lease and only if the entry is unchanged', async () => {
    const feed = state();
    await feed.register('run1', entry);
    const [stored] = await feed.all();
    const next = { ...entry, after: 'k10' };
    expect(await feed.advance('a', stored!, next)).toBe('not-leader');
    await feed.hold('a', 5000);
    // A resume rewrote the entry since it was read: the feeder's move is refused.
    await feed.register('run1', { ...entry, since: 2 });
    expect(await feed.advance('a', stored!, next)).toBe('changed');
    expect(await feed.get('run1')).toEqual({ ...entry, since: 2 });
    const [fresh] = await feed.all();
    expect(await feed.advance('a', fresh!, { ...entry, since: 2, after: 'k10' })).toBe('moved');
    expect((await feed.get('run1'))?.after).toBe('k10');
    const [last] = await feed.all();
    expect(await feed.advance('a', last!, undefined)).toBe('moved');
    expect(await feed.get('run1')).toBeUndefined();
  });

  it('lists the runs being fed oldest first', async () => {
    const feed = state();
    await feed.register('20261123T120000-bbbb', entry);
    await feed.register('20261123T110000-aaaa', entry);
    expect((await feed.all()).map((e) => e.runId)).toEqual([
      '20261123T110000-aaaa',
      '20261123T120000-bbbb',
    ]);
  });
});
