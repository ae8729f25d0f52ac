/** The call protocol of the export threads: a thread that dies fails every call, saying why. */
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { threadCalls } from '../../../src/report/export/thread-calls.ts';

describe('thread calls', () => {
  it('say that a thread ran out of memory, and refuse later calls', async () => {
    // Allocates until its old generation (8 MB) is full.
    const worker = new Worker('const kept = []; for (;;) kept.push(new Array(1e5).fill(1));', {
      eval: true,
      resourceLimits: { maxOldGenerationSizeMb: 8 },
    });
    const calls = threadCalls<string, string>(worker, 'a test thread');
    await expect(calls.call('page')).rejects.toThrow(/^a test thread ran out of memory/);
    await expect(calls.call('next page')).rejects.toThrow(/ran out of memory/);
    await calls.close();
  });

  it('close lets the call under way return before the thread is terminated', async () => {
    // Terminated inside a SQLite call, a reader thread would kill the process (better-sqlite3
    // throws into a stopping isolate).
    const shared = new SharedArrayBuffer(8);
    const marks = new Int32Array(shared);
    const helper = new URL('../../helpers/busy-call-thread.ts', import.meta.url).href;
    const worker = new Worker(
      `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(helper)}); });`,
      { eval: true, workerData: { busyMs: 400, marks: shared } },
    );
    const calls = threadCalls<number, number>(worker, 'a test thread');
    const underWay = calls.call(1).catch((error: unknown) => error);
    while (Atomics.load(marks, 0) === 0) await sleep(10);
    await calls.close();
    expect(Atomics.load(marks, 1)).toBe(1);
    expect(await underWay).toBeInstanceOf(Error);
  });
});
