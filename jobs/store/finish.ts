/**
 * What the store role does once store jobs' events are committed, before the jobs complete. A
 * search worker killed after its record reached the store queue, before its job ended, must not
 * have the task searched again (its search job is marked done, src/queue/inflight.ts
 * DONE_FIELD), nor its call's worst case stay reserved (its budget is settled here, as the
 * worker would have: the settle is idempotent, so the worker's own, or a lost call's mark,
 * changes nothing more).
 */
import { budgetCredits } from '../../src/events/call.ts';
import { doneSearchJobKeys, markJobsDone } from '../../src/queue/inflight.ts';
import type { Store } from '../../src/store/index.ts';
import type { RoleContext } from '../role.ts';

export interface CallToSettle {
  runId: string;
  callId: string;
  credits: number;
}

/**
 * Calls of known cost among `events` (not LOST), to settle with their run's budget: at what
 * they count against it (src/events/call.ts `budgetCredits`).
 */
export function callsToSettle(events: readonly unknown[]): CallToSettle[] {
  const calls: CallToSettle[] = [];
  for (const e of events) {
    const c = e as { type?: unknown; runId?: unknown; callId?: unknown; outcome?: unknown };
    const credits = countedCredits(e as CountedCall);
    if (c.type !== 'call' || c.outcome === 'LOST' || typeof credits !== 'number') continue;
    if (typeof c.runId !== 'string' || typeof c.callId !== 'string') continue;
    calls.push({ runId: c.runId, callId: c.callId, credits });
  }
  return calls;
}

interface CountedCall {
  creditsUsed?: unknown;
  creditsMax?: unknown;
  creditsAnomaly?: unknown;
}

/** `budgetCredits` of an event not yet validated: undefined when its credits are no number. */
function countedCredits(e: CountedCall): number | undefined {
  if (typeof e.creditsUsed !== 'number') return undefined;
  const credits = budgetCredits({
    creditsUsed: e.creditsUsed,
    creditsMax: typeof e.creditsMax === 'number' ? e.creditsMax : null,
    creditsAnomaly: e.creditsAnomaly === true,
  });
  return credits ?? undefined;
}

/** Marks the search jobs of `events` done and settles their calls' budgets. */
export function finishCommitted(
  ctx: Pick<RoleContext, 'redis' | 'prefix' | 'budget' | 'keys'>,
  store: Pick<Store, 'runs'>,
): (events: readonly unknown[]) => Promise<void> {
  return async (events) => {
    await markJobsDone(ctx.redis, doneSearchJobKeys(ctx.prefix, events));
    // One read per run of the batch, not one per call.
    const hasBudget = new Map<string, boolean>();
    const budgeted = callsToSettle(events).filter((call) => {
      let known = hasBudget.get(call.runId);
      if (known === undefined) {
        known = store.runs.get(call.runId)?.maxCredits != null;
        hasBudget.set(call.runId, known);
      }
      return known;
    });
    // Sent together: one round trip for the batch, not one per call.
    await Promise.all(
      budgeted.map((call) =>
        ctx.budget.settle(call.runId, call.callId, call.credits, { journal: ctx.keys.inflight }),
      ),
    );
  };
}
