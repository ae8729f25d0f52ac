/** One POST of a webhook notification (undici). Redirects are not followed; any 2xx delivers. */
import { request } from 'undici';
import { discardBody, readBodyStart } from '../api/body.ts';

export interface PostOutcome {
  /** HTTP status, or null when no answer came (refused, reset, timed out). */
  status: number | null;
  /** Why it did not deliver; null when it did. */
  error: string | null;
  durationMs: number;
}

/** Longest part of a receiver's answer quoted in an error, in characters. */
/** Bytes of an error answer read, at most: enough for QUOTED_CHARS characters of UTF-8. */
const QUOTED_BYTES = 4096;
const QUOTED_CHARS = 200;

export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<PostOutcome> {
  const startedAt = performance.now();
  const took = () => performance.now() - startedAt;
  try {
    const res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    // Only what is quoted is read: a receiver's error page may be of any size.
    let text = '';
    if (ok) discardBody(res.body);
    else text = await readBodyStart(res.body, QUOTED_BYTES);
    const error = ok
      ? null
      : `the receiver answered ${res.statusCode}${text ? `: ${text.slice(0, QUOTED_CHARS)}` : ''}`;
    return { status: res.statusCode, error, durationMs: took() };
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    return { status: null, error: `no answer from the receiver: ${message}`, durationMs: took() };
  }
}
