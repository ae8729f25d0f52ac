/**
 * A SQLite writer on its own thread. A process that owns the database and also runs search
 * jobs (`run --local`, `worker --roles search,store`) spends a third of its main thread on
 * SQLite; here that work runs on another core while the main thread keeps calling the API.
 * Batches are committed in the order they were posted; the batches of one tick travel as one
 * message (see writer-thread-worker.ts for how they share transactions).
 *
 * If the thread dies, the batches it had not answered are committed on the calling thread
 * instead (commits are idempotent, so one the thread had finished is not doubled), and so is
 * every later batch: a lost thread costs speed, never records.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../log.ts';
import type { RejectedEvent } from './apply-events.ts';
import { directWriter, type EventWriter } from './commit.ts';
import type { Store } from './db.ts';

export interface WriterData {
  dbPath: string;
  busyTimeoutMs: number;
}
/** A message carries the batches of one tick; each is committed, or fails, as a whole. */
export type ToWriter = { type: 'write'; id: number; batches: unknown[][] } | { type: 'close' };
/** Per batch of the message: the events that failed validation, or why the commit failed. */
export type BatchOutcome = { rejected: RejectedEvent[] } | { failed: string };
export type FromWriter = { type: 'ready' } | { type: 'done'; id: number; outcomes: BatchOutcome[] };

interface Pending {
  events: unknown[];
  resolve: (rejected: RejectedEvent[]) => void;
  reject: (error: unknown) => void;
}

/** The writes of one tick, posted as one message (one structured clone, one wake-up). */
interface Posted {
  writes: Pending[];
}

// Compiled (dist/), the worker module runs as it is; from the sources, an entry registers tsx.
const ENTRY = import.meta.url.endsWith('.js')
  ? new URL('./writer-thread-worker.js', import.meta.url)
  : new URL('./writer-thread-entry.js', import.meta.url);
const YOUNG_GENERATION_MB = 8;

export class StoreWriterThread implements EventWriter {
  /** Where writes go once the thread is gone: the calling thread. */
  readonly #fallback: EventWriter;
  readonly #logger: Logger;
  readonly #worker: Worker;
  /** Posted messages not answered yet, by id. */
  readonly #pending = new Map<number, Posted>();
  /** Writes of the current tick, posted together once it ends. */
  #tick: Pending[] = [];
  #nextId = 1;
  /** Set once the thread is gone; writes then run on the calling thread. */
  #gone = false;
  #closing = false;

  private constructor(store: Store, logger: Logger, worker: Worker) {
    this.#fallback = directWriter(store);
    this.#logger = logger;
    this.#worker = worker;
    worker.on('message', (message: FromWriter) => this.#onMessage(message));
    worker.on('error', (error) => {
      this.#logger.error({ err: error }, 'SQLite writer thread failed; writing on the main thread');
    });
    worker.on('exit', () => this.#onExit());
  }

  /** Starts the thread on `store`'s database file; resolves once it has opened it. */
  static async start(
    store: Store,
    logger: Logger,
    busyTimeoutMs = 5000,
  ): Promise<StoreWriterThread> {
    const data: WriterData = { dbPath: store.path, busyTimeoutMs };
    const worker = new Worker(ENTRY, {
      workerData: data,
      // Each batch is cloned into this thread and dropped after its commit: a small young
      // generation collects that garbage early instead of letting the heap swell (worker RSS
      // over a 100,000-task run stays flat with it; throughput is the same).
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    await new Promise<void>((resolve, reject) => {
      const onMessage = (message: FromWriter) => {
        if (message.type !== 'ready') return;
        worker.off('error', reject);
        worker.off('message', onMessage);
        resolve();
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
    return new StoreWriterThread(store, logger, worker);
  }

  /**
   * Commits `events`; resolves with the events that failed validation (indexes in `events`).
   * The writes of one tick of the event loop travel to the thread as one message and commit in
   * one transaction: with hundreds of searches in flight, several end in the same tick.
   */
  write(events: unknown[]): Promise<RejectedEvent[]> {
    if (this.#gone) return this.#fallback.write(events);
    return new Promise<RejectedEvent[]>((resolve, reject) => {
      if (this.#tick.length === 0) setImmediate(() => this.#post());
      this.#tick.push({ events, resolve, reject });
    });
  }

  #post(): void {
    const writes = this.#tick;
    this.#tick = [];
    if (writes.length === 0) return;
    const id = this.#nextId++;
    this.#pending.set(id, { writes });
    const message: ToWriter = { type: 'write', id, batches: writes.map((w) => w.events) };
    this.#worker.postMessage(message);
  }

  /** Stops the thread at once, as a crash would; later writes run on the calling thread. */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }

  /** Waits for the batches posted so far, then closes the thread's connection. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    if (this.#gone) return;
    this.#post();
    const exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));
    const message: ToWriter = { type: 'close' };
    this.#worker.postMessage(message);
    await exited;
  }

  #onMessage(message: FromWriter): void {
    if (message.type === 'ready') return;
    const posted = this.#pending.get(message.id);
    if (!posted) return;
    this.#pending.delete(message.id);
    posted.writes.forEach((w, i) => {
      const outcome = message.outcomes[i];
      if (outcome && 'rejected' in outcome) w.resolve(outcome.rejected);
      else w.reject(new Error(`SQLite writer: ${outcome?.failed ?? 'no answer for the batch'}`));
    });
  }

  #onExit(): void {
    this.#gone = true;
    // Writes of this tick never reached the thread: they go with the unanswered ones.
    const unanswered = [...[...this.#pending.values()].flatMap((p) => p.writes), ...this.#tick];
    this.#pending.clear();
    this.#tick = [];
    if (unanswered.length === 0) return;
    if (!this.#closing) {
      this.#logger.error(
        { batches: unanswered.length },
        'SQLite writer thread stopped; committing its unanswered batches on the main thread',
      );
    }
    for (const w of unanswered) this.#fallback.write(w.events).then(w.resolve, w.reject);
  }
}
