/**
 * Delivering the webhook of one finished scheduled run: build its payload, sign it, POST it,
 * and record the attempt. What to do next (try again later, give up) is the caller's queue's
 * business: this returns the state the attempt left.
 */
import type { Dispatcher } from 'undici';
import { type Logger, maskUrlSecrets } from '../log.ts';
import type { NotificationState, Store } from '../store/index.ts';
import { type PostOutcome, postWebhook } from './deliver.ts';
import { buildNotification, NOTIFY_EVENT } from './payload.ts';
import {
  DELIVERY_HEADER,
  EVENT_HEADER,
  SIGNATURE_HEADER,
  signatureOf,
  TIMESTAMP_HEADER,
} from './sign.ts';

export interface SendOptions {
  /** HMAC key (HARVEST_NOTIFY_SECRET); without it nothing is sent and the delivery fails. */
  secret: string | undefined;
  /** This is the last attempt the queue makes: a failure now is final. */
  final: boolean;
  /** Longest wait for the receiver's answer, in ms. */
  timeoutMs: number;
  /**
   * What connects to the receiver: the guarded agent (jobs/runs/webhook-agent.ts), which
   * refuses loopback, private and metadata addresses unless HARVEST_NOTIFY_ALLOW_HOSTS allows
   * the host.
   */
  dispatcher: Dispatcher;
  /** New results listed at most. */
  maxNewResults: number;
  logger: Logger;
}

export interface SendResult {
  /** `delivered`; `pending` (try again); `failed` (given up). `already` when nothing was due. */
  state: NotificationState | 'already';
  status: number | null;
  error: string | null;
}

export async function sendNotification(
  store: Store,
  runId: string,
  options: SendOptions,
): Promise<SendResult> {
  const row = store.notifications.get(runId);
  if (row?.state !== 'pending') return { state: 'already', status: null, error: null };
  // The URL's query and credentials may be the receiver's secret: logs get them masked.
  const log = options.logger.child({ runId, url: maskUrlSecrets(row.url) });
  const at = Date.now();
  const payload = buildNotification(store, runId, options.maxNewResults);
  let outcome: PostOutcome;
  let final = options.final;
  if (!payload || !options.secret) {
    // Another attempt would not fix these.
    final = true;
    const error = payload
      ? 'HARVEST_NOTIFY_SECRET is not set on the worker: nothing is sent unsigned'
      : `run ${runId} is not in the database`;
    outcome = { status: null, durationMs: 0, error };
  } else {
    outcome = await post(row.url, JSON.stringify(payload), runId, options.secret, options);
    // A refused address stays refused until the setting changes: no attempt is wasted on it.
    if (outcome.refused) final = true;
  }
  const state: NotificationState =
    outcome.error === null ? 'delivered' : final ? 'failed' : 'pending';
  const { status, error, durationMs } = outcome;
  const attempt = store.notifications.recordAttempt({
    runId,
    at,
    status,
    error,
    durationMs,
    state,
  });
  if (state === 'delivered') log.info({ attempt }, 'notification delivered');
  else log.warn({ attempt, state, error: outcome.error }, 'notification not delivered');
  return { state, status: outcome.status, error: outcome.error };
}

function post(url: string, body: string, runId: string, secret: string, options: SendOptions) {
  const { timeoutMs, dispatcher } = options;
  const timestampSec = Math.floor(Date.now() / 1000);
  return postWebhook(
    url,
    body,
    {
      [EVENT_HEADER]: NOTIFY_EVENT,
      [DELIVERY_HEADER]: runId,
      [TIMESTAMP_HEADER]: String(timestampSec),
      [SIGNATURE_HEADER]: signatureOf(secret, timestampSec, body),
    },
    timeoutMs,
    dispatcher,
  );
}
