/** The call protocol of the export threads: a thread that dies fails every call, saying why. */
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
});
