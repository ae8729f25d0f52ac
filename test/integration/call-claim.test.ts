/** A call's claim (budget reservation, journal entry) taken with its rate-limit turn, on real Redis. */
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { Budget } from '../../src/queue/budget.ts';
import { CLAIM, callClaim } from '../../src/queue/call-claim.ts';
import { type InflightCall, InflightJournal, journalEntry } from '../../src/queue/inflight.ts';
import { harvestKeys, QUEUES } from '../../src/queue/names.ts';
import { RateController, type RateControllerOptions } from '../../src/queue/rate/controller.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { capturedLogger } from '../helpers/logger.ts';
import { testRedis } from '../helpers/redis.ts';

const defer = useCleanup();

function setup(options?: RateControllerOptions) {
  const { prefix, redis } = testRedis(defer);
  const queue = new Queue(QUEUES.search, { connection: redis, prefix });
  defer(() => queue.close());
  const keys = harvestKeys(prefix);
  const rate = new RateController(redis, keys, capturedLogger().logger, options);
  const journal = new InflightJournal(redis, keys);
  const budget = new Budget(redis, keys);
  const spent = async (runId: string) => Number((await redis.hget(keys.budget, runId)) ?? 0);
  const reserved = () => redis.hgetall(keys.reservations);
  return { redis, keys, rate, journal, budget, spent, reserved };
}

function call(callId: string, runId = 'r1'): InflightCall {
  return { callId, runId, taskKey: 't', attempt: 1, startedAt: Date.now(), workerId: 'w1' };
}

describe('callClaim with the rate-limit turn', () => {
  it('a call that may go at once is journaled, and reserved from its budget, with its turn', async () => {
    const { redis, keys, rate, journal, spent, reserved } = setup();
    const c1 = call('c1');
    const ticket = await rate.beforeCall(callClaim(keys, c1, { credits: 4, maxCredits: 10 }));
    expect(ticket?.claim).toBe(CLAIM.taken);
    expect(await redis.hget(keys.inflight, 'c1')).toBe(journalEntry(c1));
    expect(await journal.ofWorker('w1')).toEqual([c1]);
    expect(await spent('r1')).toBe(4);
    expect(await reserved()).toEqual({ 'r1|c1': '4' });
    // Without a budget: journaled, nothing reserved.
    const c2 = call('c2', 'r2');
    expect((await rate.beforeCall(callClaim(keys, c2)))?.claim).toBe(CLAIM.taken);
    expect(await journal.pending()).toBe(2);
    expect(await spent('r2')).toBe(0);
    expect(await reserved()).toEqual({ 'r1|c1': '4' });
  });

  it('a call whose record is durable settles its budget and leaves the journal in one script', async () => {
    const { keys, rate, journal, budget, spent, reserved } = setup();
    await rate.beforeCall(callClaim(keys, call('c1'), { credits: 4, maxCredits: 10 }));
    await rate.beforeCall(callClaim(keys, call('c2'), { credits: 4, maxCredits: 10 }));
    await budget.settle('r1', 'c1', 1, { journal: keys.inflight });
    expect(await spent('r1')).toBe(5);
    expect(await reserved()).toEqual({ 'r1|c2': '4' });
    expect((await journal.ofWorker('w1')).map((c) => c.callId)).toEqual(['c2']);
  });

  it('a call the budget refuses takes its turn but leaves no reservation and no entry', async () => {
    const { keys, rate, journal, budget, spent, reserved } = setup();
    expect(await budget.reserve('r1', 'c0', 8, 10)).toBe(true);
    const ticket = await rate.beforeCall(
      callClaim(keys, call('c1'), { credits: 4, maxCredits: 10 }),
    );
    expect(ticket?.claim).toBe(CLAIM.overBudget);
    expect(await journal.pending()).toBe(0);
    expect(await spent('r1')).toBe(8);
    expect(await reserved()).toEqual({ 'r1|c0': '8' });
  });

  it('a call that must wait for its turn, or is held back, claims nothing', async () => {
    // Rolling, 4 in any 500 ms (+ 250 ms guard), one of them the refused call: three calls go,
    // the fourth's turn is about 750 ms off.
    const lesson = [300, 'Consumed (req/500ms): 4, Remaining (req/500ms): 0'] as const;
    const fill = async (s: ReturnType<typeof setup>) => {
      await s.rate.onRateLimited(...lesson);
      // Time passing is the point: the 429's own wait holds every call of the key first.
      await sleep(s.rate.heldForMs() + 10);
      for (const id of ['c1', 'c2', 'c3']) {
        expect((await s.rate.beforeCall(callClaim(s.keys, call(id))))?.claim).toBe(CLAIM.taken);
      }
    };
    const waiting = setup({ maxHoldMs: 2000 });
    await fill(waiting);
    const fourth = await waiting.rate.beforeCall(
      callClaim(waiting.keys, call('c4'), { credits: 4, maxCredits: 10 }),
    );
    expect(fourth).toMatchObject({ claim: CLAIM.notRun });
    expect(await waiting.journal.pending()).toBe(3);
    expect(await waiting.reserved()).toEqual({});

    const held = setup({ maxHoldMs: 0 });
    await fill(held);
    expect(
      await held.rate.beforeCall(callClaim(held.keys, call('c4'), { credits: 4, maxCredits: 10 })),
    ).toBeUndefined();
    expect(await held.journal.pending()).toBe(3);
    expect(await held.reserved()).toEqual({});
  });
});
