/** A budget that stops a run, beside the shared rate limit: refused tasks take no turn of it. */
import { afterEach, describe, expect, it } from 'vitest';
import { apiKeyId } from '../../src/queue/rate/hold.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe('budget and rate limit', () => {
  it('tasks the budget refuses fail without taking a turn of the rate limit', async () => {
    h = await startHarness();
    const values = Array.from({ length: 30 }, (_, i) => i).join(', ');
    const file = h.writePipeline(
      'budget-rate',
      `name: budget-rate\nbudget:\n  maxCredits: 6\nsearches:\n  - matrix:\n      n: [${values}]\n    query: "budget rate {n}"\n    limit: 2\n`,
    );
    await h.startPool({ concurrency: 1 });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitForRun(h.runtime, runId, { pollMs: 50 });
    const calls = h.runtime.store.calls.summary(runId).calls;
    const refused = h.runtime.store.tasks.failedByCode(runId).BUDGET_EXCEEDED ?? 0;
    expect(refused).toBeGreaterThan(20);
    expect(calls + refused).toBe(30);
    // Every turn the rate controller gave went to a call that was made.
    const { rateLog } = h.runtime.keys.rateOf(apiKeyId(h.settings.apiKey));
    expect(await h.runtime.redis.zcard(rateLog)).toBe(calls);
  }, 60_000);
});
