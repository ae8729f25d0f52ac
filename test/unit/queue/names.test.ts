import { describe, expect, it } from 'vitest';
import { harvestKeys, newRunId, parseSearchJobId, searchJobId } from '../../../src/queue/names.ts';

describe('names', () => {
  it('joins run id and task key without a colon (BullMQ refuses it)', () => {
    const id = searchJobId('20261122T101500-a1b2', '0123456789abcdef');
    expect(id).toBe('20261122T101500-a1b2.0123456789abcdef');
    expect(id).not.toContain(':');
    expect(parseSearchJobId(id)).toEqual({
      runId: '20261122T101500-a1b2',
      taskKey: '0123456789abcdef',
    });
  });
  it('reads run and task from a job id only when harvest made it', () => {
    for (const id of ['', 'noDot', '.key', 'run.', '42'])
      expect(parseSearchJobId(id)).toBeUndefined();
  });
  it('makes sortable run ids from the clock and a random suffix', () => {
    const at = Date.UTC(2026, 10, 22, 10, 15, 0);
    expect(newRunId(at, () => 0)).toBe('20261122T101500-0000');
    expect(newRunId(at, () => 0.5)).toMatch(/^20261122T101500-[0-9a-z]{4}$/);
    expect(newRunId(at + 1000, () => 0) > newRunId(at, () => 0.99)).toBe(true);
  });
  it('keeps every harvest key under the prefix', () => {
    const k = harvestKeys('test-x');
    for (const key of [k.budget, k.inflight, k.rate, k.pausedReason, k.workerHeartbeat('w1')]) {
      expect(key.startsWith('test-x:')).toBe(true);
    }
    expect(k.pattern).toBe('test-x:*');
  });
});
