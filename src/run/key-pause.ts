/**
 * A 401 or 402 pauses the whole search queue: the pause belongs to the API key (every run
 * waiting on the queue is held by it), not to the run whose call met it. A run started or
 * resumed later checks the key once with a free authenticated call (the active-crawls
 * listing) and lifts the pause when the key works again, instead of waiting behind it.
 */
import { ForbiddenError, PaymentRequiredError, UnauthorizedError } from '../api/errors.ts';
import type { ApiClient } from '../api/index.ts';
import { type RetryOptions, withRetry } from '../api/retry-now.ts';
import { HarvestError } from '../errors.ts';
import { resumeQueue } from '../queue/pause.ts';
import { KEY_PAUSE_CODES } from './key-pause-codes.ts';
import { pausedReason, type Runtime } from './runtime.ts';

export { KEY_PAUSE_CODES } from './key-pause-codes.ts';

export interface KeyPause {
  code: string;
  reason: string;
  at: number;
}

/** The pause of the search queue, when it belongs to the API key. */
export async function keyPause(
  runtime: Pick<Runtime, 'redis' | 'searchQueue' | 'keys'>,
): Promise<KeyPause | undefined> {
  const paused = await pausedReason(runtime);
  return paused && KEY_PAUSE_CODES.has(paused.code) ? paused : undefined;
}

export type ProbeOutcome =
  | { kind: 'not-paused' }
  | { kind: 'lifted'; pause: KeyPause }
  | { kind: 'no-key'; pause: KeyPause };

/**
 * When the queue is paused for the key: probes the key and lifts the pause if it works. A 408,
 * a 429, a 5xx or a network fault says nothing of the key: the probe is tried again (a few
 * times, as `harvest crawls` does). Throws `API_KEY_REFUSED` (exit 3) with the service's answer
 * when the key is still refused (401, 402, 403), `API_KEY_UNCHECKED` (exit 3) when the service
 * could not say.
 */
export async function liftKeyPauseIfFixed(
  runtime: Runtime,
  client: ApiClient | undefined,
  retry?: RetryOptions,
): Promise<ProbeOutcome> {
  const pause = await keyPause(runtime);
  if (!pause) return { kind: 'not-paused' };
  if (!client) return { kind: 'no-key', pause };
  try {
    await withRetry(
      (signal) => client.activeCrawls({ version: 'v2', ...(signal ? { signal } : {}) }),
      retry,
    );
  } catch (error) {
    const answer = error instanceof Error ? error.message : String(error);
    const refused =
      error instanceof UnauthorizedError ||
      error instanceof PaymentRequiredError ||
      error instanceof ForbiddenError;
    throw refused
      ? new HarvestError(
          'API_KEY_REFUSED',
          `the search queue is paused for the API key (${pause.code}), and the key still does not work: ${answer}. ` +
            'Fix HARVEST_API_KEY or the account, then run again.',
          { exitCode: 3, cause: error },
        )
      : new HarvestError(
          'API_KEY_UNCHECKED',
          `the search queue is paused for the API key (${pause.code}), and the key could not be checked: ${answer}. ` +
            'Run again to check it once more.',
          { exitCode: 3, cause: error },
        );
  }
  await resumeQueue(runtime.searchQueue, runtime.redis, runtime.keys.pausedReason);
  return { kind: 'lifted', pause };
}
