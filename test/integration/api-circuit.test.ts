/** The API circuit's rules as Redis applies them (src/queue/circuit.ts), shared by every pool. */
import { describe, expect, it } from 'vitest';
import { ApiCircuit, readCircuit } from '../../src/queue/circuit.ts';
import { harvestKeys } from '../../src/queue/names.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { testRedis } from '../helpers/redis.ts';

const defer = useCleanup();

function circuitOf(options: { threshold?: number; minTasks?: number } = {}) {
  const { prefix, redis } = testRedis(defer);
  const keys = harvestKeys(prefix);
  return { circuit: new ApiCircuit(redis, keys, options), redis, keys };
}

const call = (taskKey: string, n: number) => ({ taskKey, callId: `${taskKey}-${n}` });

describe('the API circuit', () => {
  it('a call that cannot connect opens it; later failures find it open', async () => {
    const { circuit, redis, keys } = circuitOf();
    expect(await circuit.judge('unreachable', call('a', 1), 'refused', 1000, 5000)).toBe('opened');
    expect(await circuit.judge('flaky', call('b', 1), 'reset', 1000, 5100)).toBe('open');
    expect(await readCircuit(redis, keys)).toMatchObject({
      since: 5000,
      nextProbeAt: 6000,
      lastError: 'reset',
      lastFailureAt: 5100,
      probes: 0,
    });
  });

  it('5xx and timeouts open it only in a row, from several tasks, with no healthy answer between', async () => {
    const { circuit } = circuitOf({ threshold: 4, minTasks: 2 });
    // One task's bad luck: never an outage, however long.
    for (let n = 0; n < 6; n++) {
      expect(await circuit.judge('flaky', call('a', n), '502', 1000, 1000 + n)).toBe('task');
    }
    // A healthy answer clears the row...
    circuit.answered(true, 2000);
    expect(await circuit.judge('flaky', call('b', 1), '502', 1000, 2001)).toBe('task');
    expect(await circuit.judge('flaky', call('c', 1), '502', 1000, 2002)).toBe('task');
    expect(await circuit.judge('flaky', call('c', 2), '502', 1000, 2003)).toBe('task');
    // ...and the fourth in a row, from two tasks, opens the circuit.
    expect(await circuit.judge('flaky', call('c', 3), '502', 1000, 2004)).toBe('opened');
  });

  it('an answer that is not healthy (a 5xx) does not clear the row', async () => {
    const { circuit } = circuitOf({ threshold: 2, minTasks: 2 });
    expect(await circuit.judge('flaky', call('a', 1), '500', 1000, 1000)).toBe('task');
    circuit.answered(false, 1500);
    expect(await circuit.judge('flaky', call('b', 1), '500', 1000, 2000)).toBe('opened');
  });

  it('a failed probe moves the next one; an answered probe closes it, keeping when it answered', async () => {
    const { circuit, redis, keys } = circuitOf();
    await circuit.judge('unreachable', call('a', 1), 'refused', 1000, 1000);
    await circuit.probeFailed('still refused', 9000, 2000);
    expect(await readCircuit(redis, keys)).toMatchObject({
      probes: 1,
      nextProbeAt: 9000,
      lastError: 'still refused',
      lastFailureAt: 2000,
    });
    expect(await circuit.close(10_000)).toBe(true);
    expect(await readCircuit(redis, keys)).toBeUndefined();
    expect(await redis.hget(keys.apiCircuit, 'answeredAt')).toBe('10000');
    // Closed: a late probe failure does not open it again, and closing twice says so.
    await circuit.probeFailed('late', 20_000, 11_000);
    expect(await readCircuit(redis, keys)).toBeUndefined();
    expect(await circuit.close()).toBe(false);
  });

  it('one pool at a time holds the right to probe', async () => {
    const { circuit } = circuitOf();
    expect(await circuit.takeProbeLease('one', 5000)).toBe(true);
    expect(await circuit.takeProbeLease('two', 5000)).toBe(false);
    await circuit.releaseProbeLease();
    expect(await circuit.takeProbeLease('two', 5000)).toBe(true);
  });
});
