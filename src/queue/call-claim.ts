/**
 * What a search call holds while it is in flight, taken in the same script as its rate-limit
 * turn (src/queue/rate/scripts.ts `admitThen`): its budget reservation, when the run has a
 * budget, and its journal entry (src/queue/inflight.ts). One round trip instead of three, and
 * all or nothing: a call the rate limit holds back, or the budget refuses, leaves neither a
 * reservation nor an entry behind, and a worker that dies right after still leaves both.
 *
 * Only a call that may go at once is claimed here; one that must wait for its turn first
 * reserves and journals after its wait, on its own (jobs/search/processor.ts).
 */
import { RESERVE_FUNCTION } from './budget.ts';
import { type InflightCall, journalEntry } from './inflight.ts';
import type { HarvestKeys } from './names.ts';
import { admitThen } from './rate/scripts.ts';

/** What the claim did (the fourth value of the turn's answer). */
export const CLAIM = {
  /** Not run: the call was not admitted, or must wait for its turn. */
  notRun: 0,
  /** Reserved (with a budget) and journaled: the call may be sent. */
  taken: 1,
  /** The budget would be passed: nothing reserved, nothing journaled. */
  overBudget: 2,
} as const;

// KEYS[3..5]: journal, budget counter, reservations. ARGV[3..7]: call id, journal entry, run id,
// credits to reserve, max credits ('' without a budget).
const SCRIPT = admitThen(`${RESERVE_FUNCTION}
if ARGV[7] ~= '' and reserve(KEYS[4], KEYS[5], ARGV[5], ARGV[3], ARGV[6], ARGV[7]) < 0 then
  return {1, 0, version, ${CLAIM.overBudget}}
end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
return {1, 0, version, ${CLAIM.taken}}`);

/** A script run in place of the bare admission, with its own keys and arguments. */
export interface TurnClaim {
  script: string;
  keys: string[];
  args: (string | number)[];
}

/** The claim of `call`: journal it, and reserve `budget.credits` of the run's budget if given. */
export function callClaim(
  keys: Pick<HarvestKeys, 'inflight' | 'budget' | 'reservations'>,
  call: InflightCall,
  budget?: { credits: number; maxCredits: number },
): TurnClaim {
  return {
    script: SCRIPT,
    keys: [keys.inflight, keys.budget, keys.reservations],
    args: [
      call.callId,
      journalEntry(call),
      call.runId,
      budget?.credits ?? 0,
      budget?.maxCredits ?? '',
    ],
  };
}
