/**
 * The pauses of the search queue that belong to the API key rather than to one run (see
 * ./key-pause.ts), and what a person is told of each: a 401 and a 402 ask for different fixes
 * (the pause's reason, from src/api/backoff.ts, says which). Imports nothing, so
 * `harvest status` reads it without loading the queues.
 */

export interface KeyPauseWords {
  /** What holds the runs: `the API key`, `out of credits`. */
  label: string;
  /** The HTTP status that paused the queue. */
  status: number;
}

export const KEY_PAUSES: Readonly<Record<string, KeyPauseWords>> = {
  UNAUTHORIZED: { label: 'the API key', status: 401 },
  PAYMENT_REQUIRED: { label: 'out of credits', status: 402 },
};

/** Pause codes that belong to the API key. */
export const KEY_PAUSE_CODES: ReadonlySet<string> = new Set(Object.keys(KEY_PAUSES));

/** The words of a key pause's code; undefined for any other pause. */
export function keyPauseWords(code: string): KeyPauseWords | undefined {
  return Object.hasOwn(KEY_PAUSES, code) ? KEY_PAUSES[code] : undefined;
}
