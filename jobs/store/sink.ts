/**
 * Batches of events for a write that takes them whole: concurrent pushers' events go to one
 * write, and every pusher's promise settles when that write has. Its use: a search worker without
 * the database adds one `store` job per batch (`queueWrite`, src/queue/store-queue.ts), not one
 * per search job. A search job completes only after its events are durable, so a crash can
 * repeat a call but never lose its record.
 *
 * The database's writer needs none in front of it: it puts the writes that come together in one
 * transaction itself (`EventWriter`, src/store/writer/commit.ts).
 */
import type { StoreEvent } from '../../src/events/store.ts';
import type { WriteEvents } from '../../src/queue/store-queue.ts';

export interface StoreSinkOptions {
  /** Flush at once when this many events are waiting. Default 500. */
  maxBatch?: number;
  /** Longest an event waits for companions before a flush, in ms. Default 2. */
  maxDelayMs?: number;
  /**
   * Writes in flight at once; events pushed meanwhile wait for one to end and go together in
   * the next. Default unbounded. 1 suits a write that takes one batch at a time anyway: batches
   * that queue behind each other there cost a write each, where one batch would cost one.
   */
  maxInFlight?: number;
}

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class StoreSink {
  readonly #write: WriteEvents;
  readonly #maxBatch: number;
  readonly #maxDelayMs: number;
  readonly #maxInFlight: number;
  #events: StoreEvent[] = [];
  #waiters: Waiter[] = [];
  #timer: NodeJS.Timeout | undefined;
  #inFlight = new Set<Promise<void>>();

  constructor(write: WriteEvents, options: StoreSinkOptions = {}) {
    this.#write = write;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#maxDelayMs = options.maxDelayMs ?? 2;
    this.#maxInFlight = options.maxInFlight ?? Number.POSITIVE_INFINITY;
  }

  /** Resolves once `events` are durable (in the store queue, or committed). */
  push(events: readonly StoreEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    const done = new Promise<void>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
    });
    this.#events.push(...events);
    if (this.#events.length >= this.#maxBatch) {
      void this.#flushNow();
    } else {
      this.#timer ??= setTimeout(() => void this.#flushNow(), this.#maxDelayMs);
    }
    return done;
  }

  /** Flushes whatever is waiting and waits for every flush under way. */
  async drain(): Promise<void> {
    while (this.#events.length > 0 || this.#inFlight.size > 0) {
      void this.#flushNow();
      await Promise.allSettled([...this.#inFlight]);
    }
  }

  #flushNow(): Promise<void> {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#events.length === 0) return Promise.resolve();
    // Full: the flush that ends next starts this one (#afterFlush).
    if (this.#inFlight.size >= this.#maxInFlight) return Promise.resolve();
    const events = this.#events;
    const waiters = this.#waiters;
    this.#events = [];
    this.#waiters = [];
    // A write that throws synchronously must reject the pushers too, not escape the timer.
    const flush = Promise.resolve()
      .then(() => this.#write(events))
      .then(
        () => {
          for (const w of waiters) w.resolve();
        },
        (error: unknown) => {
          for (const w of waiters) w.reject(error);
        },
      )
      .finally(() => {
        this.#inFlight.delete(flush);
        this.#afterFlush();
      });
    this.#inFlight.add(flush);
    return flush;
  }

  /** Events that waited for a write to end go now. */
  #afterFlush(): void {
    if (this.#events.length > 0 && this.#inFlight.size < this.#maxInFlight) void this.#flushNow();
  }
}
