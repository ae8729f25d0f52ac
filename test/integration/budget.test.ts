/** The shared budget counter on real Redis. */
import { afterEach, describe, expect, it } from 'vitest';
import { Budget } from '../../src/queue/budget.ts';
import { createRedis } from '../../src/queue/connection.ts';
import { harvestKeys } from '../../src/queue/names.ts';
import { deletePrefix, freshPrefix, REDIS_URL } from '../helpers/redis.ts';

const undo: (() => unknown)[] = [];
afterEach(async () => {
  while (undo.length > 0) await undo.pop()?.();
});

async function freshBudget(): Promise<{
  budget: Budget;
  spent: (runId: string) => Promise<number>;
}> {
  const prefix = freshPrefix();
  undo.push(() => deletePrefix(prefix));
  const redis = createRedis(REDIS_URL, 'client');
  undo.push(() => redis.quit());
  const key = harvestKeys(prefix).budget;
  return {
    budget: new Budget(redis, key),
    spent: async (runId) => Number((await redis.hget(key, runId)) ?? 0),
  };
}

describe('Budget', () => {
  it('reserves up to the maximum, and settles to what calls cost', async () => {
    const { budget, spent } = await freshBudget();
    expect(await budget.reserve('r1', 4, 10)).toBe(true);
    expect(await budget.reserve('r1', 4, 10)).toBe(true);
    expect(await budget.reserve('r1', 4, 10)).toBe(false);
    expect(await spent('r1')).toBe(8);
    await budget.settle('r1', 4, 1);
    expect(await spent('r1')).toBe(5);
    expect(await budget.reserve('r1', 4, 10)).toBe(true);
  });

  it('raiseTo never lowers the counter: reservations of calls in flight are kept', async () => {
    const { budget, spent } = await freshBudget();
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
