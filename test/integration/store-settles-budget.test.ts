/**
 * A search worker killed after its call's record reached the store queue, before it settled the
 * call's budget reservation: the store role settles it as it commits the record (the settle is
 * idempotent), so the run's budget holds what the call cost, not its worst case for good, and
 * no reaper later takes the recorded call for a lost one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { newCallId } from '../../src/events/ids.ts';
import type { StoreEvent } from '../../src/events/store.ts';
import { Budget } from '../../src/queue/budget.ts';
import { InflightJournal } from '../../src/queue/inflight.ts';
import { queueWrite } from '../../src/queue/store-queue.ts';
import { startRun } from '../../src/run/start.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const PIPELINE = `name: settled-by-store
searches:
  - query: "settled by the store"
    limit: 2
budget:
  maxCredits: 100
`;

describe('the store role and the budget', () => {
  it('settles the reservation of a recorded call whose worker died before settling it', async () => {
    h = await startHarness();
    const { runId } = await startRun(h.runtime, h.writePipeline('settled', PIPELINE), {
      logger: h.logger,
    });
    const { redis, keys } = h.runtime;
    const budget = new Budget(redis, keys);
    const journal = new InflightJournal(redis, keys);
    const taskKey = h.runtime.store.tasks.unfinished(runId).next().value!.key;
    // What the worker did before it died: reserved its worst case, journaled the call, and
    // handed the record to the store queue.
    const callId = newCallId();
    expect(await budget.reserve(runId, callId, 20, 100)).toBe(true);
    await journal.begin({
      callId,
      runId,
      taskKey,
      attempt: 1,
      startedAt: Date.now(),
      workerId: 'dead',
    });
    const call: StoreEvent = {
      type: 'call',
      callId,
      runId,
      taskKey,
      attempt: 1,
      startedAt: Date.now(),
      durationMs: 10,
      status: 200,
      outcome: 'ok',
      searchId: 'search-1',
      creditsUsed: 3,
    };
    await queueWrite(h.runtime.storeQueue, h.runtime.redis)([call]);
    await h.startPool({ roles: ['store'] });
    await waitFor('the call committed', () => h!.runtime.store.calls.totals(runId).calls > 0, {
      timeoutMs: 10_000,
      intervalMs: 50,
    });
    // The settlement removes the call from the journal, in the script that settles the budget.
    await waitFor('the call settled (out of the journal)', () => journal.pending(), {
      until: (n) => n === 0,
    });
    expect({
      counter: Number(await redis.hget(keys.budget, runId)),
      reservations: await redis.hlen(keys.reservations),
      inFlight: await journal.pending(),
    }).toEqual({ counter: 3, reservations: 0, inFlight: 0 });
  }, 30_000);
});
