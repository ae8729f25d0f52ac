/**
 * The database's one writer of worker events: the process's own thread (`directWriter`) or its
 * writer thread (writer-thread.ts). Each batch is one `applyEvents` transaction, which also
 * finishes the runs whose every task has ended (apply-events.ts).
 */
import type { RejectedEvent } from '../apply-events.ts';
import type { Store } from '../db.ts';

/** Commits batches of worker events, one transaction each, in the order they are given. */
export interface EventWriter {
  /** Resolves once committed, with the events that failed validation (indexes in `events`). */
  write(events: unknown[]): Promise<RejectedEvent[]>;
  close(): Promise<void>;
}

/** Commits on the calling thread. */
export function directWriter(store: Store): EventWriter {
  return {
    write: async (events) => store.applyEvents(events).rejected,
    close: async () => {},
  };
}
