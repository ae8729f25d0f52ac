/**
 * The rate-limit holds in force under a prefix, read from Redis for `harvest status`: every API
 * key whose calls wait (a 429's wait, a spent window; src/queue/rate/hold.ts) and every run
 * whose own `run.rateLimitPerMinute` is spent for now.
 */
import type { Redis } from 'ioredis';
import type { HarvestKeys } from '../names.ts';
import { holdOfModel, type RateHold } from './hold.ts';

type HoldKeys = Pick<HarvestKeys, 'rate' | 'rateModels' | 'runRateHolds'>;

/** Holds in force now (Redis's clock), the soonest to end first. */
export async function rateHoldsInForce(redis: Redis, keys: HoldKeys): Promise<RateHold[]> {
  const [seconds, micros] = await redis.time();
  const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const holds: RateHold[] = [];
  const models = [keys.rate, ...(await scanAll(redis, keys.rateModels))];
  const keyPrefix = keys.rateModels.slice(0, -1);
  for (const model of models) {
    const fields = await redis.hgetall(model);
    const keyId = model.startsWith(keyPrefix) ? model.slice(keyPrefix.length) : 'none';
    const hold = holdOfModel(keyId, fields, nowMs);
    if (hold) holds.push(hold);
  }
  const runPrefix = keys.runRateHolds.slice(0, -1);
  for (const key of await scanAll(redis, keys.runRateHolds)) {
    const [untilMs, limit] = ((await redis.get(key)) ?? '').split(' ').map(Number);
    if (!untilMs || untilMs <= nowMs) continue;
    holds.push({
      whose: `run ${key.slice(runPrefix.length)}`,
      why: `its own limit, run.rateLimitPerMinute ${limit}`,
      untilMs,
    });
  }
  return holds.sort((a, b) => a.untilMs - b.untilMs);
}

async function scanAll(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    found.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

/** A hold in words, one line: `key 3f2a…: 429: Retry-After, until 10:15:00 (in 42 s)`. */
export function formatRateHold(hold: RateHold, nowMs: number): string {
  const until = new Date(hold.untilMs).toISOString().slice(11, 19);
  const inS = Math.max(0, Math.ceil((hold.untilMs - nowMs) / 1000));
  return `${hold.whose}: ${hold.why}, until ${until} UTC (in ${inS} s)`;
}
