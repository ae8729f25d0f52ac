/**
 * Lua scripts run by their SHA-1 (EVALSHA), sent in full only when Redis does not have them yet
 * (NOSCRIPT: a new or restarted server). The budget and rate scripts run on every call: sending
 * their text each time cost Redis more CPU than running them.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

const shas = new Map<string, string>();

function shaOf(script: string): string {
  let sha = shas.get(script);
  if (sha === undefined) {
    sha = createHash('sha1').update(script).digest('hex');
    shas.set(script, sha);
  }
  return sha;
}

export async function evalScript(
  redis: Redis,
  script: string,
  numKeys: number,
  ...args: (string | number)[]
): Promise<unknown> {
  try {
    return await redis.evalsha(shaOf(script), numKeys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return redis.eval(script, numKeys, ...args);
  }
}
