/** The shared budget counter on real Redis. */
import { describe, expect, it } from 'vitest';
import { Budget } from '../../src/queue/budget.ts';
import { harvestKeys } from '../../src/queue/names.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { testRedis } from '../helpers/redis.ts';

const defer = useCleanup();

function freshBudget(): { budget: Budget; spent: (runId: string) => Promise<number> } {
  const { prefix, redis } = testRedis(defer);
  const key = harvestKeys(prefix).budget;
  return {
    budget: new Budget(redis, key),
    spent: async (runId) => Number((await redis.hget(key, runId)) ?? 0),
  };
}

describe('Budget', () => {
  it('reserves up to the maximum, and settles to what calls cost', async () => {
    const { budget, spent } = freshBudget();
    expect(await budget.reserve('r1', 4, 10)).toBe(true);
    expect(await budget.reserve('r1', 4, 10)).toBe(true);
    expect(await budget.reserve('r1', 4, 10)).toBe(false);
    expect(await spent('r1')).toBe(8);
    await budget.settle('r1', 4, 1);
    expect(await spent('r1')).toBe(5);
    expect(await budget.reserve('r1', 4, 10)).toBe(true);
  });

  it('raiseTo never lowers the counter: reservations of calls in flight are kept', async () => {
    const { budget, spent } = freshBudget();
    await budget.raiseTo('r1', 6);
    expect(await spent('r1')).toBe(6);
    // Two calls in flight hold 8 more; SQLite only knows the 6 spent.
    await budget.reserve('r1', 4, 100);
    await budget.reserve('r1', 4, 100);
    await budget.raiseTo('r1', 6);
    expect(await spent('r1')).toBe(14);
    await budget.settle('r1', 4, 2);
    await budget.settle('r1', 4, 2);
    expect(await spent('r1')).toBe(10);
    await budget.raiseTo('r1', 12);
    expect(await spent('r1')).toBe(12);
  });
});
