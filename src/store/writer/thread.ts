/**
 * A SQLite writer on its own thread. A process that owns the database and also runs search
 * jobs (`run --local`, `worker --roles search,store`) spends a third of its main thread on
 * SQLite; here that work runs on another core while the main thread keeps calling the API.
 * Batches are committed in the order they were posted, one transaction each.
 *
 * If the thread dies, the batches it had not answered are committed on the calling thread
 * instead (commits are idempotent, so one the thread had finished is not doubled), and so is
 * every later batch: a lost thread costs speed, never records.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../log.ts';
import type { RejectedEvent } from '../apply-events.ts';
import type { Store } from '../db.ts';
import { directWriter, type EventWriter } from './commit.ts';

export interface WriterData {
  dbPath: string;
  busyTimeoutMs: number;
}
export type ToWriter = { type: 'write'; id: number; events: unknown[] } | { type: 'close' };
export type FromWriter =
  | { type: 'ready' }
  | { type: 'done'; id: number; rejected: RejectedEvent[] }
  | { type: 'failed'; id: number; message: string };

interface Pending {
  events: unknown[];
  resolve: (rejected: RejectedEvent[]) => void;
  reject: (error: unknown) => void;
}

// Compiled (dist/), the worker module runs as it is; from the sources, an entry registers tsx.
const ENTRY = import.meta.url.endsWith('.js')
  ? new URL('./thread-worker.js', import.meta.url)
  : new URL('./thread-entry.js', import.meta.url);
const YOUNG_GENERATION_MB = 8;

export class StoreWriterThread implements EventWriter {
  /** Where writes go once the thread is gone: the calling thread. */
  readonly #fallback: EventWriter;
  readonly #logger: Logger;
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
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

  /**
   * Starts the thread on `store`'s database file; resolves once it has opened it. Its writes
   * wait for another process's lock as long as `store`'s do, unless `busyTimeoutMs` says.
   */
  static async start(
    store: Store,
    logger: Logger,
    busyTimeoutMs = store.busyTimeoutMs,
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

  /** Commits `events` in one transaction; resolves with the events that failed validation. */
  write(events: unknown[]): Promise<RejectedEvent[]> {
    if (this.#gone) return this.#fallback.write(events);
    const id = this.#nextId++;
    return new Promise<RejectedEvent[]>((resolve, reject) => {
      this.#pending.set(id, { events, resolve, reject });
      const message: ToWriter = { type: 'write', id, events };
      this.#worker.postMessage(message);
    });
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
    const exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));
    const message: ToWriter = { type: 'close' };
    this.#worker.postMessage(message);
    await exited;
  }

  #onMessage(message: FromWriter): void {
    if (message.type === 'ready') return;
    const pending = this.#pending.get(message.id);
    if (!pending) return;
    this.#pending.delete(message.id);
    if (message.type === 'done') pending.resolve(message.rejected);
    else pending.reject(new Error(`SQLite writer: ${message.message}`));
  }

  #onExit(): void {
    this.#gone = true;
    if (this.#pending.size === 0) return;
    if (!this.#closing) {
      this.#logger.error(
        { batches: this.#pending.size },
        'SQLite writer thread stopped; committing its unanswered batches on the main thread',
      );
    }
    for (const [id, pending] of this.#pending) {
      this.#pending.delete(id);
      this.#fallback.write(pending.events).then(pending.resolve, pending.reject);
    }
  }
}
