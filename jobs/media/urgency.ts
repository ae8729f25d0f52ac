/**
 * Media urgency: while media due within `urgentMs` waits to start, in the media queue or in this
 * process for a download slot, the pool's search gate (jobs/search/gate.ts) is held, and searches
 * in this process start no new call; it is released once none waits. Searches and downloads of
 * one process share its event loop, and a deadline missed costs a re-issued search.
 */
import type { Queue } from 'bullmq';
import type { Logger } from '../../src/log.ts';
import type { DownloadSlots } from '../../src/media/slots.ts';
import type { SearchGate } from '../search/gate.ts';

/** How often media urgency is checked, in ms. */
export const URGENCY_CHECK_MS = 100;

export interface MediaUrgencyOptions {
  /** The deadline of the pending media row due first, ms since the epoch; null when none. */
  nextDeadline(): number | null;
  /** The media queue: urgent media counts only while some job waits in it or for a slot. */
  queue: Queue;
  /** This process's download slots (src/media/slots.ts). */
  slots: DownloadSlots;
  /** The gate held while media is urgent. */
  gate: SearchGate;
  /** Media due within this many ms is urgent; 0 turns urgency off. */
  urgentMs: number;
  log: Logger;
}

/** Whether `deadlineAt` is due within `urgentMs` of `nowMs` (never when `urgentMs` is 0). Pure. */
export function dueSoon(deadlineAt: number | null, nowMs: number, urgentMs: number): boolean {
  return urgentMs > 0 && deadlineAt !== null && deadlineAt - nowMs < urgentMs;
}

/**
 * Checks urgency every URGENCY_CHECK_MS (one check at a time) until stopped; `stop` waits for
 * the check under way and releases the gate.
 */
export function watchMediaUrgency(options: MediaUrgencyOptions): { stop(): Promise<void> } {
  const { queue, slots, gate } = options;
  let checking: Promise<void> | undefined;
  const check = async () => {
    let urgent = dueSoon(options.nextDeadline(), Date.now(), options.urgentMs);
    // Jobs taken from the queue may still wait here for a slot (jobs in hand outnumber slots).
    if (urgent && slots.waiting === 0) {
      const counts = await queue.getJobCounts('waiting', 'prioritized');
      urgent = (counts.waiting ?? 0) + (counts.prioritized ?? 0) > 0;
    }
    gate.set(urgent);
  };
  const timer = setInterval(() => {
    checking ??= check()
      .catch((error: unknown) => options.log.warn({ err: error }, 'media urgency check failed'))
      .finally(() => {
        checking = undefined;
      });
  }, URGENCY_CHECK_MS);
  return {
    async stop() {
      clearInterval(timer);
      await checking;
      gate.set(false);
    },
  };
}
