import { describe, expect, it, vi } from 'vitest';
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

describe('SearchGate rate holds', () => {
  it('holds for a while, keeps the longer of two holds, and lets go after it', async () => {
    const gate = new SearchGate();
    const seen: boolean[] = [];
    gate.onChange((held) => seen.push(held));
    gate.holdFor(40);
    gate.holdFor(10);
    expect(gate.held).toBe(true);
    await vi.waitFor(() => expect(gate.held).toBe(false), { timeout: 2000, interval: 5 });
    expect(seen).toEqual([true, false]);
  });

  it('urgent media and a rate hold: held until both are over', () => {
    const gate = new SearchGate();
    gate.holdFor(60_000);
    gate.set(true);
    gate.set(false);
    expect(gate.held).toBe(true);
    gate.clear();
    expect(gate.held).toBe(false);
  });
});
