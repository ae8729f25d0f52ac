/**
 * Media urgency (jobs/media/urgency.ts): the rule alone, and the watch on a real media queue in
 * Redis (fresh prefix), real download slots and the pool's real search gate.
 */
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { dueSoon, watchMediaUrgency } from '../../../../jobs/media/urgency.ts';
import { SearchGate } from '../../../../jobs/search/gate.ts';
import { DownloadSlots } from '../../../../src/media/slots.ts';
import { QUEUES } from '../../../../src/queue/names.ts';
import { useCleanup } from '../../../helpers/cleanup.ts';
import { capturedLogger } from '../../../helpers/logger.ts';
import { testRedis } from '../../../helpers/redis.ts';
import { waitFor } from '../../../helpers/wait.ts';

const defer = useCleanup();

describe('dueSoon', () => {
  it('holds for a deadline within urgentMs, never without a deadline or with urgentMs 0', () => {
    expect(dueSoon(10_500, 10_000, 1000)).toBe(true);
    expect(dueSoon(9_000, 10_000, 1000)).toBe(true); // already past
    expect(dueSoon(11_000, 10_000, 1000)).toBe(false);
    expect(dueSoon(null, 10_000, 1000)).toBe(false);
    expect(dueSoon(10_500, 10_000, 0)).toBe(false);
  });
});

describe('watchMediaUrgency', () => {
  function setup(nextDeadline: () => number | null, slots = new DownloadSlots(1)) {
    const { prefix, redis } = testRedis(defer);
    const queue = new Queue(QUEUES.media, { connection: redis, prefix });
    defer(() => queue.close());
    const gate = new SearchGate();
    const watch = watchMediaUrgency({
      nextDeadline,
      queue,
      slots,
      gate,
      urgentMs: 60_000,
      log: capturedLogger().logger,
    });
    defer(() => watch.stop());
    return { queue, gate, watch };
  }

  it('holds the gate while urgent media waits in the queue, and releases it once none does', async () => {
    const { queue, gate } = setup(() => Date.now() + 1000);
    await queue.add('media', { mediaIds: [1] });
    await waitFor('the gate held while a job waits', () => gate.held);
    await queue.drain();
    await waitFor('the gate released once no job waits', () => !gate.held);
  });

  it('holds the gate while a job here waits for a download slot, with the queue empty', async () => {
    const slots = new DownloadSlots(1);
    const release = await slots.acquire();
    const waiting = slots.acquire(Date.now() + 1000);
    const { gate } = setup(() => Date.now() + 1000, slots);
    await waitFor('the gate held while a row waits for a slot', () => gate.held);
    release();
    (await waiting)();
    await waitFor('the gate released once no row waits', () => !gate.held);
  });

  it('leaves the gate open while nothing is due soon; stop releases it', async () => {
    let deadline: number | null = null;
    let reads = 0;
    const { queue, gate, watch } = setup(() => {
      reads += 1;
      return deadline;
    });
    await queue.add('media', { mediaIds: [1] });
    await waitFor('two checks with no pending media', () => reads >= 2);
    expect(gate.held).toBe(false);
    deadline = Date.now() + 3_600_000;
    const seen = reads;
    await waitFor('two checks with media due in an hour', () => reads >= seen + 2);
    expect(gate.held).toBe(false);
    deadline = Date.now();
    await waitFor('the gate held once media is due', () => gate.held);
    await watch.stop();
    expect(gate.held).toBe(false);
  });
});
