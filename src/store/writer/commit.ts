/**
 * The database's one writer of worker events (`EventWriter`), and the one place where they are
 * batched on their way to SQLite. Two writers share it: `directWriter` commits on the calling
 * thread, `StoreWriterThread` (./thread.ts) on a thread of its own.
 *
 * Group commit: a commit's cost is mostly the commit itself (its fsync), not its rows, so writes
 * share transactions. One transaction runs at a time; the writes made meanwhile wait and go
 * together in the next one. A write may also wait up to its `waitMs` for company when no
 * transaction runs. Each write resolves once its transaction is committed, with its own events
 * that failed validation. Applying the events also finishes the runs whose every task has ended,
 * in the same transaction (../apply-events.ts).
 */
import type { RejectedEvent } from '../apply-events.ts';
import type { Store } from '../db.ts';

export interface WriteOptions {
  /**
   * Longest the write waits for others to share its transaction, in ms, when none runs.
   * Default 0: the transaction starts at once (when one runs, the write goes in the next).
   */
  waitMs?: number;
  /**
   * The transaction starts without waiting out `waitMs` once this many writes wait, this one
   * among them: a caller that can have no more in hand says so. Default no limit.
   */
  enoughWrites?: number;
}

export interface EventWriter {
  /**
   * Commits `events` with the writes around it; resolves once committed, with the events that
   * failed validation (indexes in `events`).
   */
  write(events: readonly unknown[], options?: WriteOptions): Promise<RejectedEvent[]>;
  /** Commits what waits, then closes; a write after that still commits (on the calling thread). */
  close(): Promise<void>;
}

/**
 * Commits `batches` in one transaction; resolves with the events that failed validation,
 * indexed through the batches in order (see `joined`).
 */
export type CommitBatches = (batches: readonly (readonly unknown[])[]) => Promise<RejectedEvent[]>;

/** The events of `batches` in one list, in order; a lone batch as it is. */
export function joined(batches: readonly (readonly unknown[])[]): readonly unknown[] {
  return batches.length === 1 ? (batches[0] ?? []) : batches.flat();
}

/** Commits `batches` on the calling thread, in one transaction of `store`'s connection. */
export async function commitHere(
  store: Store,
  batches: readonly (readonly unknown[])[],
): Promise<RejectedEvent[]> {
  return store.applyEvents(joined(batches)).rejected;
}

/** An `EventWriter` that commits on the calling thread. */
export function directWriter(store: Store): EventWriter {
  const group = new GroupCommit((batches) => commitHere(store, batches));
  return {
    write: (events, options) => group.write(events, options),
    close: () => group.drain(),
  };
}

interface Part {
  events: readonly unknown[];
  resolve: (rejected: RejectedEvent[]) => void;
  reject: (error: unknown) => void;
}

/** The group commit in front of a `CommitBatches`: one transaction at a time, shared by writes. */
export class GroupCommit {
  readonly #commit: CommitBatches;
  #waiting: Part[] = [];
  /** When the waiting writes' transaction is due (the earliest of their deadlines), epoch ms. */
  #dueAt = Number.POSITIVE_INFINITY;
  #enoughWrites = Number.POSITIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  /** The transaction under way; it never rejects (each write is told its own outcome). */
  #committing: Promise<void> | undefined;

  constructor(commit: CommitBatches) {
    this.#commit = commit;
  }

  write(events: readonly unknown[], options: WriteOptions = {}): Promise<RejectedEvent[]> {
    return new Promise<RejectedEvent[]>((resolve, reject) => {
      this.#waiting.push({ events, resolve, reject });
      const waitMs = options.waitMs ?? 0;
      this.#dueAt = Math.min(this.#dueAt, waitMs > 0 ? Date.now() + waitMs : 0);
      if (options.enoughWrites !== undefined) {
        this.#enoughWrites = Math.min(this.#enoughWrites, options.enoughWrites);
      }
      this.#next();
    });
  }

  /** Commits what waits now, and resolves once no transaction runs and nothing waits. */
  async drain(): Promise<void> {
    while (this.#committing || this.#waiting.length > 0) {
      if (!this.#committing) this.#start();
      await this.#committing;
    }
  }

  /** Starts the waiting writes' transaction if it is due and none runs; else sets its timer. */
  #next(): void {
    if (this.#committing || this.#waiting.length === 0) return;
    const now = this.#dueAt > 0 ? Date.now() : 0;
    if (this.#dueAt <= now || this.#waiting.length >= this.#enoughWrites) {
      this.#start();
      return;
    }
    if (this.#timerAt <= this.#dueAt) return;
    clearTimeout(this.#timer);
    this.#timerAt = this.#dueAt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      if (!this.#committing && this.#waiting.length > 0) this.#start();
    }, this.#dueAt - now);
  }

  #start(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const parts = this.#waiting;
    this.#waiting = [];
    this.#dueAt = Number.POSITIVE_INFINITY;
    this.#enoughWrites = Number.POSITIVE_INFINITY;
    this.#committing = commitParts(this.#commit, parts).finally(() => {
      this.#committing = undefined;
      this.#next();
    });
  }
}

/**
 * Commits `parts` in one transaction and tells each its outcome. Should it fail, each part is
 * tried again in a transaction of its own, so one the database refuses cannot take the others
 * down; except when the database was busy (another connection held its lock past the busy
 * timeout): alone, each part would wait as long and fail alike, so all fail at once.
 */
async function commitParts(commit: CommitBatches, parts: readonly Part[]): Promise<void> {
  const alone = (part: Part) => commit([part.events]).then(part.resolve, part.reject);
  if (parts.length === 1) return alone(parts[0] as Part);
  let rejected: RejectedEvent[];
  try {
    rejected = await commit(parts.map((part) => part.events));
  } catch (error) {
    if (databaseBusy(error)) {
      for (const part of parts) part.reject(error);
    } else {
      await Promise.all(parts.map(alone));
    }
    return;
  }
  handOut(parts, rejected);
}

/** Gives each part the rejections among its own events, indexed in them. */
function handOut(parts: readonly Part[], rejected: readonly RejectedEvent[]): void {
  let offset = 0;
  let r = 0;
  for (const part of parts) {
    const end = offset + part.events.length;
    const own: RejectedEvent[] = [];
    for (let next = rejected[r]; next !== undefined && next.index < end; next = rejected[++r]) {
      own.push({ index: next.index - offset, issues: next.issues });
    }
    part.resolve(own);
    offset = end;
  }
}

/** Whether `error` says the database was locked past its busy timeout (SQLITE_BUSY and kin). */
export function databaseBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
