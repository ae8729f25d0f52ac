/** What a pool reports to its metrics as it works; the registry (registry.ts) implements it. */
import type { StoreEvent } from '../events/store.ts';
import type { NotificationState, TickOutcome } from '../store/index.ts';

export interface PoolMetrics {
  /** Events this pool made durable; its calls are counted from them. */
  recorded(events: readonly StoreEvent[]): void;
  /** A tick the runs role handled, by what was recorded of it. */
  tick(outcome: TickOutcome): void;
  /** A webhook delivery attempt, by the state it left. */
  notification(state: NotificationState): void;
}
