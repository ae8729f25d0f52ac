/**
 * A SQLite writer on its own thread. A process that owns the database and also runs search
 * jobs (`run --local`, `worker --roles search,store`) would otherwise spend much of its main
 * thread on SQLite; here that work runs on another core while the main thread keeps calling the
 * API. The group commit (./commit.ts) runs on the calling thread: each transaction is one
 * message to the thread, and one answer back.
 *
 * If the thread dies, the transaction it had not answered is committed on the calling thread
 * instead (commits are idempotent, so one the thread had finished is not doubled), and so is
 * every later one: a lost thread costs speed, never records.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../log.ts';
import type { RejectedEvent } from '../apply-events.ts';
import type { Store } from '../db.ts';
import { commitHere, type EventWriter, GroupCommit, type WriteOptions } from './commit.ts';

export interface WriterData {
  dbPath: string;
  busyTimeoutMs: number;
}
/** `batches` are committed in one transaction (commit.ts `joined`). */
export type ToWriter =
  | { type: 'write'; id: number; batches: readonly (readonly unknown[])[] }
  | { type: 'close' };
export type FromWriter =
  | { type: 'ready' }
  | { type: 'done'; id: number; rejected: RejectedEvent[] }
  /** `code`: the SQLite error's code (SQLITE_BUSY, ...), when it had one. */
  | { type: 'failed'; id: number; message: string; code?: string };

interface Pending {
  batches: readonly (readonly unknown[])[];
  resolve: (rejected: RejectedEvent[]) => void;
  reject: (error: unknown) => void;
}

// Compiled (dist/), the worker module runs as it is; from the sources, an entry registers tsx.
const ENTRY = import.meta.url.endsWith('.js')
  ? new URL('./thread-worker.js', import.meta.url)
  : new URL('./thread-entry.js', import.meta.url);
/**
 * Each transaction's events are cloned into the thread and dropped after its commit: a small
 * young generation collects that garbage early instead of letting the thread's heap swell.
 */
const YOUNG_GENERATION_MB = 8;

export class StoreWriterThread implements EventWriter {
  /** Where transactions run once the thread is gone: the calling thread. */
  readonly #store: Store;
  readonly #logger: Logger;
  readonly #worker: Worker;
  readonly #group: GroupCommit;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  /** Set once the thread is gone; transactions then run on the calling thread. */
  #gone = false;
  #closing = false;

  private constructor(store: Store, logger: Logger, worker: Worker) {
    this.#store = store;
    this.#logger = logger;
    this.#worker = worker;
    this.#group = new GroupCommit((batches) => this.#commit(batches));
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

  write(events: readonly unknown[], options?: WriteOptions): Promise<RejectedEvent[]> {
    return this.#group.write(events, options);
  }

  /** Stops the thread at once, as a crash would; later writes run on the calling thread. */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }

  /** Commits what waits, then closes the thread's connection. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    await this.#group.drain();
    if (this.#gone) return;
    const exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));
    const message: ToWriter = { type: 'close' };
    this.#worker.postMessage(message);
    await exited;
  }

  /** One transaction: a message to the thread, or a commit here once the thread is gone. */
  #commit(batches: readonly (readonly unknown[])[]): Promise<RejectedEvent[]> {
    if (this.#gone) return commitHere(this.#store, batches);
    return new Promise<RejectedEvent[]>((resolve, reject) => {
      const id = this.#nextId++;
      const message: ToWriter = { type: 'write', id, batches };
      this.#worker.postMessage(message);
      this.#pending.set(id, { batches, resolve, reject });
    });
  }

  #onMessage(message: FromWriter): void {
    if (message.type === 'ready') return;
    const pending = this.#pending.get(message.id);
    if (!pending) return;
    this.#pending.delete(message.id);
    if (message.type === 'done') {
      pending.resolve(message.rejected);
    } else {
      const error = new Error(`SQLite writer: ${message.message}`);
      pending.reject(
        message.code === undefined ? error : Object.assign(error, { code: message.code }),
      );
    }
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
      commitHere(this.#store, pending.batches).then(pending.resolve, pending.reject);
    }
  }
}
