/**
 * Rate limits belong to the API key, not to the prefix or a pipeline: a run's own
 * `run.rateLimitPerMinute` paces that run's calls and no other's, and what a 429 teaches holds
 * for the key that got it, while a pool with another key goes on.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { harvestKeys } from '../../src/queue/names.ts';
import { RateController } from '../../src/queue/rate/controller.ts';
import { apiKeyId, holdOfModel } from '../../src/queue/rate/hold.ts';
import { rateHoldsInForce } from '../../src/queue/rate/holds.ts';
import { startRun } from '../../src/run/start.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { capturedLogger } from '../helpers/logger.ts';
import { testRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const matrix = (n: number) => Array.from({ length: n }, (_, i) => i).join(', ');

/** The hold in force on `apiKey`'s calls, if any. */
async function keyHold(harness: Harness, apiKey: string) {
  const keyId = apiKeyId(apiKey);
  const fields = await harness.runtime.redis.hgetall(harness.runtime.keys.rateOf(keyId).rate);
  return holdOfModel(keyId, fields, Date.now());
}

describe('rate limits per API key', () => {
  it("a capped pipeline then an uncapped one on one key: the second never meets the first's limit", async () => {
    h = await startHarness();
    const { redis, keys, store } = h.runtime;
    await h.startPool({ concurrency: 4 });
    const capped = h.writePipeline(
      'capped',
      `name: it-capped\nsearches:\n  - matrix:\n      n: [${matrix(4)}]\n    query: "capped {n}"\nrun:\n  rateLimitPerMinute: 1\n`,
    );
    const free = h.writePipeline(
      'free',
      `name: it-free\nsearches:\n  - matrix:\n      n: [${matrix(12)}]\n    query: "free {n}"\n`,
    );
    const c = await startRun(h.runtime, capped, { logger: h.logger });
    // One call a minute: the first goes, the others wait for the run's next turn.
    await waitFor('the capped run to spend its own limit', () =>
      redis.exists(keys.runRateHold(c.runId)),
    );
    const f = await startRun(h.runtime, free, { logger: h.logger });
    await waitFor('every task of the uncapped run to end', () => store.tasks.counts(f.runId), {
      until: (counts) => counts.done + counts.failed === 12,
      timeoutMs: 30_000,
    });

    expect(store.tasks.counts(f.runId)).toMatchObject({ done: 12, failed: 0 });
    expect(store.tasks.counts(c.runId).done).toBeLessThan(4);
    // The cap is the capped run's alone: the key's model learned nothing from it, the free
    // run's calls took no turn of a run limit, and none of them was paced.
    const model = await redis.hgetall(keys.rateOf(apiKeyId(h.settings.apiKey)).rate);
    expect(model.limit ?? '').toBe('');
    expect(await keyHold(h, h.settings.apiKey!)).toBeUndefined();
    expect(await redis.exists(keys.runRateLog(f.runId))).toBe(0);
    const paced = h
      .logs()
      .split('\n')
      .filter((line) => line.includes('run paced by its own limit'));
    expect(paced.length).toBeGreaterThan(0);
    expect(paced.filter((line) => !line.includes(c.runId))).toEqual([]);
    // `status` names the hold: the capped run, by its own limit.
    const holds = await rateHoldsInForce(redis, keys);
    expect(holds).toEqual([
      expect.objectContaining({
        whose: `run ${c.runId}`,
        why: 'its own limit, run.rateLimitPerMinute 1',
      }),
    ]);
  }, 60_000);

  it('two keys: a 429 on one holds its calls, and a pool on the other goes on', async () => {
    const keyA = 'fc-team-a-key';
    const keyB = 'fc-team-b-key';
    h = await startHarness({
      apiKey: keyA,
      sandbox: {
        keys: [
          { key: keyA, team: 'a', credits: 1_000_000 },
          { key: keyB, team: 'b', credits: 1_000_000 },
        ],
        // Per team: four searches in any two minutes.
        rateLimitPerMinute: 4,
        rateLimitMode: 'sliding',
        rateLimitWindowMs: 120_000,
      },
    });
    const { redis, keys, store } = h.runtime;
    await h.startPool({ concurrency: 2 });
    const file = h.writePipeline(
      'two-keys',
      `name: it-two-keys\nsearches:\n  - matrix:\n      n: [${matrix(8)}]\n    query: "two keys {n}"\n`,
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitFor('a 429 on key A, and its hold in Redis', () => keyHold(h!, keyA));

    // A pool with key B on the same prefix takes the jobs key A's pool leaves.
    await h.startPool({ apiKey: keyB, roles: ['search'], concurrency: 2 });
    await waitFor('every task of the run to end', () => store.tasks.counts(runId), {
      until: (counts) => counts.done + counts.failed === 8,
      timeoutMs: 30_000,
    });

    expect(store.tasks.counts(runId)).toMatchObject({ done: 8, failed: 0 });
    // Key A's four, then key B's four: B was never held by A's 429.
    const ledger = h.sandbox.ledger().teams;
    expect(ledger.a?.calls['200']).toBe(4);
    expect(ledger.b?.calls['200']).toBe(4);
    expect(ledger.b?.calls['429'] ?? 0).toBe(0);
    // Key A is still held (its two minutes are not over); key B never was.
    const holds = await rateHoldsInForce(redis, keys);
    expect(holds.map((hold) => hold.whose)).toEqual([`key ${apiKeyId(keyA)}`]);
    expect(await keyHold(h, keyB)).toBeUndefined();
    // The keys themselves are never in Redis: only their hashes name the rate keys.
    const names = await redis.keys(`${h.settings.queuePrefix}:*`);
    expect(names.filter((name) => name.includes(keyA) || name.includes(keyB))).toEqual([]);
    for (const name of names.filter((n) => n.includes(':h:rate'))) {
      const text = JSON.stringify(await redis.hgetall(name).catch(() => ({})));
      expect(text).not.toContain(keyA);
    }
  }, 60_000);
});

describe('the longest hold', () => {
  const defer = useCleanup();

  it('a Retry-After of a billion seconds holds the key for HARVEST_MAX_RATE_HOLD_MS, logged and shown as capped', async () => {
    const { prefix, redis } = testRedis(defer);
    const { logger, lines } = capturedLogger();
    const keyId = apiKeyId('fc-some-key');
    const keys = harvestKeys(prefix);
    const rate = new RateController(redis, { ...keys, ...keys.rateOf(keyId) }, logger, {
      keyId,
      maxRateHoldMs: 5000,
    });
    await rate.onRateLimited(1e12, 'Rate limit exceeded. please retry after 1000000000s');
    expect(rate.heldForMs()).toBeGreaterThan(0);
    expect(rate.heldForMs()).toBeLessThanOrEqual(5000);
    expect(lines).toContainEqual(
      expect.objectContaining({
        keyId,
        askedMs: 1e12,
        holdMs: 5000,
        msg: expect.stringContaining('capped'),
      }),
    );
    const holds = await rateHoldsInForce(redis, keys);
    expect(holds).toEqual([
      expect.objectContaining({ whose: `key ${keyId}`, why: expect.stringContaining('capped') }),
    ]);
    expect(holds[0]!.untilMs - Date.now()).toBeLessThanOrEqual(5000);
  });
});
