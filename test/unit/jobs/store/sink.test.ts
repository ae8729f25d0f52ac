import { describe, expect, it } from 'vitest';
import { StoreSink } from '../../../../jobs/store/sink.ts';
import type { StoreEvent } from '../../../../src/events/store.ts';
import { callEvent, taskEvent } from '../../store/helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

describe('StoreSink', () => {
  it('hands the events pushed together to one write, and settles every pusher after it', async () => {
    const writes: StoreEvent[][] = [];
    let release: () => void = () => {};
    const sink = new StoreSink(
      (events) => {
        writes.push(events);
        return new Promise<void>((resolve) => {
          release = resolve;
        });
      },
      { maxDelayMs: 1 },
    );
    let settled = 0;
    const pushes = [
      sink.push([callEvent('r', 't0'), taskEvent('r', 't0', 'done', T0)]),
      sink.push([callEvent('r', 't1')]),
    ].map((p) => p.then(() => (settled += 1)));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(writes.map((w) => w.length)).toEqual([3]);
    expect(settled).toBe(0);
    release();
    await Promise.all(pushes);
    expect(settled).toBe(2);
  });

  it('flushes at once when a batch is full', async () => {
    const writes: number[] = [];
    const sink = new StoreSink(
      async (events) => {
        writes.push(events.length);
      },
      { maxBatch: 2, maxDelayMs: 60_000 },
    );
    await sink.push([callEvent('r', 't0'), callEvent('r', 't1')]);
    expect(writes).toEqual([2]);
  });

  it('rejects every pusher of a batch whose write fails, even synchronously', async () => {
    const sink = new StoreSink(
      () => {
        throw new Error('disk full');
      },
      { maxDelayMs: 1 },
    );
    const results = await Promise.allSettled([
      sink.push([callEvent('r', 't0')]),
      sink.push([callEvent('r', 't1')]),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toContain('disk full');
  });

  it('drain writes what is waiting and waits for it', async () => {
    const writes: number[] = [];
    const sink = new StoreSink(
      async (events) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        writes.push(events.length);
      },
      { maxDelayMs: 60_000 },
    );
    void sink.push([callEvent('r', 't0')]);
    await sink.drain();
    expect(writes).toEqual([1]);
  });

  it('with maxInFlight 1, events pushed during a write go together in the next one', async () => {
    const writes: number[] = [];
    const releases: Array<() => void> = [];
    const sink = new StoreSink(
      (events) => {
        writes.push(events.length);
        return new Promise<void>((resolve) => releases.push(resolve));
      },
      { maxDelayMs: 1, maxInFlight: 1 },
    );
    const first = sink.push([callEvent('r', 't0')]);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const later = [1, 2, 3].map((i) => sink.push([callEvent('r', `t${i}`)]));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(writes).toEqual([1]);
    releases[0]!();
    await first;
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(writes).toEqual([1, 3]);
    const drained = sink.drain();
    releases[1]!();
    await Promise.all([...later, drained]);
    expect(writes).toEqual([1, 3]);
  });
});
