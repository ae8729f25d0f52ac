/** The shared budget counter on real Redis. */
import { describe, expect, it } from 'vitest';
import { Budget } from '../../src/queue/budget.ts';
import { harvestKeys } from '../../src/queue/names.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { testRedis } from '../helpers/redis.ts';

const defer = useCleanup();

function freshBudget() {
  const { prefix, redis } = testRedis(defer);
  const keys = harvestKeys(prefix);
  return {
    budget: new Budget(redis, keys),
    spent: async (runId: string) => Number((await redis.hget(keys.budget, runId)) ?? 0),
    /** The journal of calls in flight: `settled` subtracts only reservations of calls in it. */
    journal: keys.inflight,
    inFlight: (...callIds: string[]) =>
      redis.hset(keys.inflight, ...callIds.flatMap((id) => [id, '{}'])),
  };
}

describe('Budget', () => {
  it('reserves up to the maximum, and settles to what calls cost', async () => {
    const { budget, spent } = freshBudget();
    expect(await budget.reserve('r1', 'c1', 4, 10)).toBe(true);
    expect(await budget.reserve('r1', 'c2', 4, 10)).toBe(true);
    expect(await budget.reserve('r1', 'c3', 4, 10)).toBe(false);
    expect(await spent('r1')).toBe(8);
    await budget.settle('r1', 'c1', 1);
    expect(await spent('r1')).toBe(5);
    expect(await budget.reserve('r1', 'c4', 4, 10)).toBe(true);
  });

  it('keeps the reservation of a call lost with its worker counted, until its record settles it', async () => {
    const { budget, spent, journal, inFlight } = freshBudget();
    await budget.reserve('r1', 'c1', 4, 10);
    await budget.reserve('r1', 'c2', 4, 10);
    await inFlight('c2');
    expect(await budget.lose('r1', 'c1')).toBe(4);
    expect(await budget.lose('r1', 'c1')).toBe(0);
    // The service may have billed it: its worst case stays counted, as spent, not in flight.
    expect(await spent('r1')).toBe(8);
    expect(await budget.settled('r1', journal)).toBe(4);
    // The worker was only slow: its real record settles, and the worst case gives way to it.
    await budget.settle('r1', 'c1', 3);
    expect(await spent('r1')).toBe(7);
    expect(await budget.settled('r1', journal)).toBe(3);
    // A settled call has nothing left to lose.
    await budget.settle('r1', 'c2', 2, { journal });
    expect(await budget.lose('r1', 'c2')).toBe(0);
    expect(await spent('r1')).toBe(5);
    expect(await budget.settled('r1', journal)).toBe(5);
  });

  it("settled leaves out only the reservations of the run's calls still in flight", async () => {
    const { budget, journal, inFlight } = freshBudget();
    await budget.reserve('r1', 'c1', 4, 100);
    await budget.reserve('r10', 'c2', 7, 100);
    await inFlight('c1', 'c2');
    await budget.settle('r1', 'c0', 2);
    expect(await budget.settled('r1', journal)).toBe(2);
    expect(await budget.settled('r10', journal)).toBe(0);
    // A reservation whose call left the journal unsettled (its settle failed for good):
    // nothing will settle it, so it counts as spent, at its worst case.
    await budget.reserve('r1', 'c3', 5, 100);
    expect(await budget.settled('r1', journal)).toBe(7);
  });

  it('a settle run twice (its first reply lost) counts the call once', async () => {
    const { budget, spent, journal, inFlight } = freshBudget();
    await budget.reserve('r1', 'c1', 10, 100);
    await inFlight('c1', 'c2');
    await budget.settle('r1', 'c1', 3, { journal });
    await budget.settle('r1', 'c1', 3, { journal });
    expect(await spent('r1')).toBe(3);
    // A run without a budget reserves nothing: its calls count once all the same.
    await budget.settle('r2', 'c2', 4, { journal });
    await budget.settle('r2', 'c2', 4, { journal });
    expect(await spent('r2')).toBe(4);
  });

  it('raiseTo never lowers the counter: reservations of calls in flight are kept', async () => {
    const { budget, spent } = freshBudget();
    await budget.raiseTo('r1', 6);
    expect(await spent('r1')).toBe(6);
    // Two calls in flight hold 8 more; SQLite only knows the 6 spent.
    await budget.reserve('r1', 'c1', 4, 100);
    await budget.reserve('r1', 'c2', 4, 100);
    await budget.raiseTo('r1', 6);
    expect(await spent('r1')).toBe(14);
    await budget.settle('r1', 'c1', 2);
    await budget.settle('r1', 'c2', 2);
    expect(await spent('r1')).toBe(10);
    await budget.raiseTo('r1', 12);
    expect(await spent('r1')).toBe(12);
  });
});
