/**
 * The reaper of calls lost with dead workers, as several pools run it on one Redis: a lost call
 * is recorded, its budget released and counted against its task once, whichever pools find it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { lostCallsOf, watchLostCalls } from '../../jobs/lost-calls.ts';
import type { StoreEvent } from '../../src/events/store.ts';
import { createLogger } from '../../src/log.ts';
import { Budget } from '../../src/queue/budget.ts';
import { InflightJournal } from '../../src/queue/inflight.ts';
import { harvestKeys, searchJobId } from '../../src/queue/names.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { testRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const defer = useCleanup();

describe('lost calls', () => {
  it('a call lost with its worker counts once against its task, however many pools reap it', async () => {
    const { prefix, redis } = testRedis(defer);
    const keys = harvestKeys(prefix);
    const inflight = new InflightJournal(redis, keys, 1000);
    const budget = new Budget(redis, keys);
    const call = {
      callId: '0190f000-0000-7000-8000-0000000000aa',
      runId: 'r1',
      taskKey: 'k1',
      attempt: 1,
      startedAt: Date.now(),
      workerId: 'gone', // no heartbeat: dead
    };
    expect(await budget.reserve('r1', call.callId, 10, 100)).toBe(true);
    await inflight.begin(call);

    const recorded: StoreEvent[] = [];
    let recording = 0;
    // A record takes a while (a commit, a store-queue add): a fixed 100 ms, long enough for
    // every pool to find the same orphan before any has removed it.
    const record = async (events: StoreEvent[]) => {
      recording += 1;
      await sleep(100);
      recorded.push(...events);
      recording -= 1;
    };
    const log = createLogger({ level: 'silent' });
    const pools = await Promise.all(
      ['pool-a', 'pool-b', 'pool-c'].map((workerId) =>
        watchLostCalls({
          workerId,
          roles: ['search'],
          inflight,
          budget,
          redis,
          keys,
          record,
          log,
          reapIntervalMs: 30,
        }),
      ),
    );
    defer(() => Promise.all(pools.map((p) => p.stop())));
    await waitFor('the lost call removed from the journal', () => inflight.pending(), {
      until: (n) => n === 0,
      intervalMs: 10,
    });
    // Every reap under way has ended: no record is being made, and the call was settled (its
    // count against its task is the last step of the reap that removed it).
    const reaps = async () => ({
      recording,
      lost: await lostCallsOf(redis, keys, searchJobId('r1', 'k1')),
    });
    await waitFor('the reaps under way to end', reaps, {
      until: (s) => s.recording === 0 && s.lost > 0,
    });

    expect(recorded.length).toBeGreaterThanOrEqual(1);
    expect(await lostCallsOf(redis, keys, searchJobId('r1', 'k1'))).toBe(1);
    // Its worst case stays counted against the budget (the service may have billed it), once.
    expect(Number(await redis.hget(keys.budget, 'r1'))).toBe(10);
    expect(await redis.hgetall(keys.reservations)).toEqual({ [`lost|r1|${call.callId}`]: '10' });
  });
});
