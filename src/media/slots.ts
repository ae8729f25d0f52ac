/**
 * Download slots: at most `size` media transfers on the wire at once; callers waiting for one
 * get it earliest deadline first (in the order they asked among equal deadlines).
 *
 * A media job is more than its transfer: after the last byte the file is fsynced, renamed into
 * place, its folder fsynced and its row committed, and between two jobs the worker hands one
 * back and fetches the next from Redis. Had each job held a download slot for all of that, a
 * fair share of `HARVEST_MEDIA_CONCURRENCY` would sit on the disk and on Redis instead of
 * downloading (test/bench/README.md has the figures). So the media role takes more jobs than it has slots, and each job holds a slot
 * only from its request to the last byte written: the setting bounds downloads in flight, as it
 * says, and the next job is at hand when a slot frees. A job names several rows (jobs/media/processor.ts),
 * so the rows in hand outnumber the slots many times over; a row whose URL dies soon, taken
 * from the queue after them, still goes before them here.
 */

/** Gives a slot back; a second call does nothing. */
export type Release = () => void;

export class DownloadSlots {
  readonly size: number;
  #busy = 0;
  /** Sorted by deadline, then by arrival. */
  readonly #waiting: Array<{ deadline: number; grant: () => void }> = [];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`slots must be >= 1: ${size}`);
    this.size = size;
  }

  /** Slots in use. */
  get busy(): number {
    return this.#busy;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Resolves with a slot's release once one is free: the earliest `deadline` (ms since the
   * epoch; default none, last) first, then first come, first served.
   */
  acquire(deadline = Number.POSITIVE_INFINITY): Promise<Release> {
    if (this.#busy < this.size) {
      this.#busy += 1;
      return Promise.resolve(this.#release());
    }
    return new Promise((resolve) => {
      // The slot passes straight from the releaser to this waiter: #busy stays as it is.
      const waiter = { deadline, grant: () => resolve(this.#release()) };
      // After every waiter due no later: binary search for the first one due later.
      let lo = 0;
      let hi = this.#waiting.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.#waiting[mid]!.deadline <= deadline) lo = mid + 1;
        else hi = mid;
      }
      this.#waiting.splice(lo, 0, waiter);
    });
  }

  #release(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next.grant();
      else this.#busy -= 1;
    };
  }
}
