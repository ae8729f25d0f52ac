import { describe, expect, it } from 'vitest';
import { SearchGate } from '../../../../jobs/search/gate.ts';

describe('SearchGate', () => {
  it('tells listeners of changes only, until they stop listening', () => {
    const gate = new SearchGate();
    const seen: boolean[] = [];
    const stop = gate.onChange((held) => seen.push(held));
    gate.set(false);
    gate.set(true);
    gate.set(true);
    expect(gate.held).toBe(true);
    gate.set(false);
    stop();
    gate.set(true);
    expect(seen).toEqual([true, false]);
  });
});
