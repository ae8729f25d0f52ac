/** The shared rate controller of one API key, on real Redis. */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { rateLimitMessage } from '../../src/contract/index.ts';
import { harvestKeys } from '../../src/queue/names.ts';
import { RateController, type RateControllerOptions } from '../../src/queue/rate/controller.ts';
import { PROBE_CALLS } from '../../src/queue/rate/scripts.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { capturedLogger } from '../helpers/logger.ts';
import { testRedis } from '../helpers/redis.ts';

const defer = useCleanup();

function setup() {
  const { prefix, redis } = testRedis(defer);
  const keys = harvestKeys(prefix);
  const controller = (options?: RateControllerOptions) =>
    new RateController(redis, keys, capturedLogger().logger, options);
  return { redis, keys, controller };
}

/** The hosted 429 text for a window of `windowMs` whose allowance `limit` ran out, ending in `endsInMs`. */
function window429(limit: number, windowMs: number, endsInMs: number): [number, string] {
  const retryAfterS = Math.max(1, Math.ceil(endsInMs / 1000));
  const message = rateLimitMessage({
    consumed: limit + 1,
    remaining: 0,
    retryAfterS,
    resetsAt: new Date(Date.now() + endsInMs),
    windowMs,
  });
  return [retryAfterS * 1000, `POST /v2/search: HTTP 429: ${message}`];
}

/** Calls `beforeCall` `n` times at once; how many were admitted. */
async function admitted(rate: RateController, n: number): Promise<number> {
  const tickets = await Promise.all(Array.from({ length: n }, () => rate.beforeCall()));
  return tickets.filter(Boolean).length;
}

describe('RateController', () => {
  it('a 429 holds every call of the key: this process at once, the others at their next turn', async () => {
    const { redis, keys, controller } = setup();
    const held: number[] = [];
    const rate = controller({ onHold: (ms) => held.push(ms) });
    await rate.onRateLimited(5000, 'Rate limit exceeded');
    expect(rate.heldForMs()).toBeGreaterThan(4000);
    expect(held[0]).toBeGreaterThan(4000);
    expect(await redis.hget(keys.rate, 'holdWhy')).toBe('retry-after');
    // Another process on the key: not admitted, and its own workers hold too.
    const other = controller({ maxHoldMs: 0 });
    expect(await admitted(other, 1)).toBe(0);
    expect(other.heldForMs()).toBeGreaterThan(3000);
    expect((await controller().model()).regime).toBe('paced');
  });

  it('fixed window: the allowance is shared by every controller, then all hold until the reset', async () => {
    const { controller } = setup();
    const [a, b] = [controller({ maxHoldMs: 0 }), controller({ maxHoldMs: 0 })];
    // The first 429 of the window: 6 per 1.5 s windows, this one ends in 400 ms.
    await a.onRateLimited(...window429(6, 1500, 400));
    const model = await b.model();
    expect(model).toMatchObject({ regime: 'fixed', limit: 6, windowMs: 1500 });
    expect(await admitted(b, 3)).toBe(0);
    expect(b.heldForMs()).toBeGreaterThan(0);

    await sleep(model.windowEndsAt - Date.now() + 20); // fixed: to the window's end
    // A few calls open the window; the others follow once no 429 came back (they wait for it
    // in their workers).
    expect(await admitted(a, 8)).toBe(PROBE_CALLS);
    const [c, d] = [controller({ maxHoldMs: 200 }), controller({ maxHoldMs: 200 })];
    const [fromC, fromD] = await Promise.all([admitted(c, 5), admitted(d, 5)]);
    expect(fromC + fromD).toBe(6 - PROBE_CALLS);
    // The allowance is back one window (and at most a guard) later: a fixed duration.
    await sleep(1900);
    expect(await admitted(a, 8)).toBe(PROBE_CALLS);
    expect(await admitted(c, 8)).toBe(6 - PROBE_CALLS);
  });

  it('fixed window: calls made just before a window ends count in the next one too', async () => {
    const { controller } = setup();
    const rate = controller({ maxHoldMs: 0 });
    await rate.onRateLimited(...window429(6, 1500, 400));
    await sleep((await rate.model()).windowEndsAt - Date.now() + 20); // fixed: to the window's end
    expect(await admitted(rate, 2)).toBe(2);
    // The service may count calls this close to the end (which it named to the second) in its
    // next window.
    const { windowEndsAt } = await rate.model();
    await sleep(windowEndsAt - Date.now() - 200); // fixed: to just before the window's end
    expect(await admitted(rate, 3)).toBe(3);
    await sleep(windowEndsAt - Date.now() + 20); // fixed: to the window's end
    expect(await admitted(rate, 8)).toBe(3);
  });

  it('answers to calls admitted before the lesson teach nothing new', async () => {
    const { controller } = setup();
    const rate = controller();
    const tickets = await Promise.all([rate.beforeCall(), rate.beforeCall(), rate.beforeCall()]);
    await rate.onRateLimited(...window429(20, 60_000, 30_000), tickets[0]);
    const learnt = await rate.model();
    // The hosted service counts refused calls too: the wave's later answers name higher counts.
    await rate.onRateLimited(...window429(21, 60_000, 30_000), tickets[1]);
    await rate.onRateLimited(...window429(22, 60_000, 30_000), tickets[2]);
    expect(await rate.model()).toEqual(learnt);
  });

  it('rolling: at most the limit in any window; a later call waits in its worker for its turn', async () => {
    const { controller } = setup();
    const rate = controller({ maxHoldMs: 2000 });
    await rate.onRateLimited(300, 'Consumed (req/500ms): 4, Remaining (req/500ms): 0');
    expect((await rate.model()).regime).toBe('rolling');
    // Time passing is the point: the 429's own wait holds every call of the key first.
    await sleep(rate.heldForMs() + 10);
    const started = Date.now();
    const times: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        expect(await rate.beforeCall()).toBeDefined();
        times.push(Date.now() - started);
      }),
    );
    times.sort((x, y) => x - y);
    expect(times[2]).toBeLessThan(300);
    // 500 ms window + 250 ms guard after the first three.
    expect(times[3]).toBeGreaterThanOrEqual(740);
  });

  it('a call waiting for its turn asks again when a 429 changed the model meanwhile', async () => {
    const { controller } = setup();
    const rate = controller({ maxHoldMs: 2000 });
    await rate.onRateLimited(300, 'Consumed (req/500ms): 4, Remaining (req/500ms): 0');
    // Time passing is the point: the 429's own wait holds every call of the key first.
    await sleep(rate.heldForMs() + 10);
    const started = Date.now();
    const times: number[] = [];
    const calls = Array.from({ length: 6 }, async () => {
      expect(await rate.beforeCall()).toBeDefined();
      times.push(Date.now() - started);
    });
    // A fixed duration: the 429 comes 100 ms in, while three calls wait for their turn.
    await sleep(100);
    // Only 2 per window after all, and a wait of 1 s: the three waiting for 750 ms ask again,
    // wait out the hold, then go two in one window and the third in the next.
    await rate.onRateLimited(1000, 'Consumed (req/500ms): 3, Remaining (req/500ms): 0');
    await Promise.all(calls);
    times.sort((x, y) => x - y);
    expect(times[2]).toBeLessThan(100);
    expect(times[3]).toBeGreaterThanOrEqual(1050);
    expect(times[5]! - times[3]!).toBeGreaterThanOrEqual(700);
  });

  it('paced: one call per interval across controllers; beyond maxHoldMs the worker holds', async () => {
    const { controller } = setup();
    const rate = controller({ maxHoldMs: 300 });
    // A token bucket: "retry after 1s", full again much later. 12 per 1 s: about 85 ms apart.
    await rate.onRateLimited(
      1000,
      rateLimitMessage({
        consumed: 13,
        remaining: 0,
        retryAfterS: 1,
        resetsAt: new Date(Date.now() + 60_000),
        windowMs: 1000,
      }),
    );
    const model = await rate.model();
    expect(model.regime).toBe('paced');
    await sleep(1000); // fixed: past the 429's retry-after (1 s)
    const started = Date.now();
    const other = controller({ maxHoldMs: 300 });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? rate : other).beforeCall()),
    );
    expect(results.filter(Boolean).length).toBeGreaterThanOrEqual(3);
    expect(results.filter(Boolean).length).toBeLessThanOrEqual(5);
    expect(Date.now() - started).toBeLessThan(600);
  });

  it('many workers learning from one wave at once agree on one model', async () => {
    const { controller } = setup();
    const rates = Array.from({ length: 8 }, () => controller());
    const tickets = await Promise.all(rates.map((r) => r.beforeCall()));
    await Promise.all(
      rates.map((r, i) => r.onRateLimited(...window429(50 + i, 60_000, 20_000), tickets[i])),
    );
    expect(await rates[0]!.model()).toMatchObject({ regime: 'fixed', limit: 50 });
  });
});
