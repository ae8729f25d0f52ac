import { describe, expect, it } from 'vitest';
import { DownloadSlots } from '../../../src/media/slots.ts';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('download slots', () => {
  it('lets `size` callers in at once and the rest in the order they asked', async () => {
    const slots = new DownloadSlots(2);
    const order: string[] = [];
    const take = (name: string) =>
      slots.acquire().then((release) => {
        order.push(name);
        return release;
      });
    const a = take('a');
    const b = take('b');
    const c = take('c');
    const d = take('d');
    await tick();
    expect(order).toEqual(['a', 'b']);
    expect(slots.busy).toBe(2);
    expect(slots.waiting).toBe(2);
    (await b)();
    await tick();
    expect(order).toEqual(['a', 'b', 'c']);
    expect(slots.busy).toBe(2);
    (await a)();
    (await c)();
    await tick();
    expect(order).toEqual(['a', 'b', 'c', 'd']);
    expect(slots.busy).toBe(1);
    (await d)();
    expect(slots.busy).toBe(0);
  });

  it('ignores a second release of the same slot', async () => {
    const slots = new DownloadSlots(1);
    const first = await slots.acquire();
    const second = slots.acquire();
    const third = slots.acquire();
    first();
    first();
    await second;
    await tick();
    expect(slots.busy).toBe(1);
    expect(slots.waiting).toBe(1);
    (await second)();
    (await third)();
    expect(slots.busy).toBe(0);
  });

  it('gives a freed slot to the earliest deadline waiting, equal deadlines in order', async () => {
    const slots = new DownloadSlots(1);
    const order: string[] = [];
    const take = (name: string, deadline?: number) =>
      slots.acquire(deadline).then((release) => {
        order.push(name);
        release();
      });
    const first = await slots.acquire(5);
    const waiters = [
      take('late', 300),
      take('none'),
      take('soon-a', 100),
      take('latest', 900),
      take('soon-b', 100),
    ];
    expect(slots.waiting).toBe(5);
    first();
    await Promise.all(waiters);
    expect(order).toEqual(['soon-a', 'soon-b', 'late', 'latest', 'none']);
    expect(slots.busy).toBe(0);
  });

  it('refuses a size below 1', () => {
    expect(() => new DownloadSlots(0)).toThrow(RangeError);
    expect(() => new DownloadSlots(1.5)).toThrow(RangeError);
  });
});
