/**
 * Seeded randomness and the fault model. One PRNG stream per sandbox draws the injected faults
 * and latencies, so a run with the same seed and the same request order meets the same faults.
 */
import type { FaultRates, LatencyRange } from './options.ts';

/** A PRNG returning floats in [0, 1). */
export type Random = () => number;

/** mulberry32: small, fast, good enough for test fault injection. */
export function createRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export type Fault = 'timeout408' | 'error500' | 'malformed' | 'drop' | undefined;

const FAULT_ORDER = ['timeout408', 'error500', 'malformed', 'drop'] as const;

/** Draws at most one fault for a request; the probabilities are cumulative slices of [0, 1). */
export function drawFault(faults: Required<FaultRates>, random: Random): Fault {
  const total = faults.timeout408 + faults.error500 + faults.malformed + faults.drop;
  if (total === 0) return undefined;
  const x = random();
  let edge = 0;
  for (const name of FAULT_ORDER) {
    edge += faults[name];
    if (x < edge) return name;
  }
  return undefined;
}

/** Simulated work in ms for one request; 0 without a latency setting. */
export function drawLatencyMs(latency: LatencyRange | undefined, random: Random): number {
  if (!latency) return 0;
  if (latency.maxMs === latency.minMs) return latency.minMs;
  return latency.minMs + random() * (latency.maxMs - latency.minMs);
}

export function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
