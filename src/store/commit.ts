/**
 * `commitEvents`: applies a batch of worker events in one transaction, which also marks the
 * runs whose every task has ended as finished (apply-events.ts). Every write of worker events
 * goes through it, on the database's one writer: the process's own thread (`directWriter`) or
 * its writer thread (writer-thread.ts).
 */
import type { ApplyReport, RejectedEvent } from './apply-events.ts';
import type { Store } from './db.ts';

/** Commits batches of worker events, one transaction each, in the order they are given. */
export interface EventWriter {
  /** Resolves once committed, with the events that failed validation (indexes in `events`). */
  write(events: unknown[]): Promise<RejectedEvent[]>;
  close(): Promise<void>;
}

/** Commits on the calling thread. */
export function directWriter(store: Store): EventWriter {
  return {
    write: async (events) => commitEvents(store, events).rejected,
    close: async () => {},
  };
}

export function commitEvents(store: Store, events: readonly unknown[]): ApplyReport {
  return store.applyEvents(events);
}
