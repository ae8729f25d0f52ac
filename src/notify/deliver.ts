/**
 * One POST of a webhook notification (undici), through the caller's dispatcher: the guarded
 * agent that applies the address rule (jobs/runs/webhook-agent.ts). Redirects are not
 * followed; any 2xx delivers.
 *
 * What an attempt records is the status and a short reason harvest wrote itself: no text of
 * the receiver's answer (an error page of whatever was at the address) and no error message
 * that could quote it. The answer's body is never read.
 */
import { type Dispatcher, request } from 'undici';
import { discardBody } from '../api/body.ts';

export interface PostOutcome {
  /** HTTP status, or null when no answer came (refused, reset, timed out). */
  status: number | null;
  /** Why it did not deliver; null when it did. */
  error: string | null;
  durationMs: number;
  /** The address rule refused the receiver's address: another attempt would not fix it. */
  refused?: true;
}

/** The code of the guarded agent's refusals of webhook receivers (jobs/runs/webhook-agent.ts). */
export const REFUSED_CODE = 'NOTIFY_ADDRESS_REFUSED';

export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  dispatcher: Dispatcher,
): Promise<PostOutcome> {
  const startedAt = performance.now();
  const took = () => performance.now() - startedAt;
  try {
    const res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      dispatcher,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    discardBody(res.body);
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    const error = ok ? null : `the receiver answered ${res.statusCode}`;
    return { status: res.statusCode, error, durationMs: took() };
  } catch (cause) {
    const error = noAnswerReason(cause, timeoutMs);
    return {
      status: null,
      error,
      durationMs: took(),
      ...(refusedByRule(cause) ? { refused: true } : {}),
    };
  }
}

/** The error's code, or its cause's: a plain code only (never free text). */
function codeOf(cause: unknown): string | undefined {
  const error = (cause ?? {}) as { code?: unknown; cause?: { code?: unknown } };
  return [error.code, error.cause?.code].find(
    (c): c is string => typeof c === 'string' && /^[A-Z0-9_]{1,48}$/.test(c),
  );
}

/** Refused by the address rule (src/media/agent.ts `AddressRefusedError`). */
function refusedByRule(cause: unknown): boolean {
  return codeOf(cause) === REFUSED_CODE;
}

/** Reasons by error code; any other code is quoted as it is, never a message. */
const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (ECONNREFUSED)',
  ECONNRESET: 'connection reset (ECONNRESET)',
  ENOTFOUND: 'no such host (ENOTFOUND)',
  EAI_AGAIN: 'the host name did not resolve (EAI_AGAIN)',
  EHOSTUNREACH: 'host unreachable (EHOSTUNREACH)',
  ENETUNREACH: 'network unreachable (ENETUNREACH)',
  UND_ERR_CONNECT_TIMEOUT: 'no connection in time (UND_ERR_CONNECT_TIMEOUT)',
  UND_ERR_SOCKET: 'the connection closed (UND_ERR_SOCKET)',
};

/**
 * Why no answer came, in harvest's words: the address rule's refusal (its own text: the host
 * from the pipeline, the address from DNS, the setting that allows it), a timeout, or an error
 * code. Messages of other errors are not used: a parser's may quote what the receiver sent.
 */
export function noAnswerReason(cause: unknown, timeoutMs: number): string {
  const error = cause as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown };
  const inner = (error?.cause ?? {}) as { code?: unknown; message?: unknown };
  const code = codeOf(cause);
  if (refusedByRule(cause)) {
    // The refusal itself, or the error that wraps it (a cause carries the code then).
    const refusal = error.code === REFUSED_CODE ? error : inner;
    return String(refusal.message);
  }
  if (
    error?.name === 'TimeoutError' ||
    error?.name === 'AbortError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'ETIMEDOUT'
  ) {
    return `no answer from the receiver within ${timeoutMs} ms`;
  }
  const reason = code ? (REASONS[code] ?? code) : 'the request failed';
  return `no answer from the receiver: ${reason}`;
}
