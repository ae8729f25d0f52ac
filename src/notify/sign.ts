/**
 * Signing of webhook notifications. The receiver recomputes
 * `HMAC-SHA256(secret, "<X-Harvest-Timestamp>.<raw body>")` in hex and compares it with
 * `X-Harvest-Signature` (after `sha256=`) in constant time; checking that the timestamp is recent
 * refuses replays.
 */
import { createHmac } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-harvest-signature';
export const TIMESTAMP_HEADER = 'x-harvest-timestamp';
export const DELIVERY_HEADER = 'x-harvest-delivery';
export const EVENT_HEADER = 'x-harvest-event';

/** `sha256=<hex>` of the timestamp (seconds since the epoch), a dot and the body. */
export function signatureOf(secret: string, timestampSec: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestampSec}.${body}`).digest('hex');
  return `sha256=${mac}`;
}
