/**
 * When a signed media URL dies, and by when harvest must start its download. Pure.
 *
 * | URL form (query parameters, names case-insensitive)       | expiry                         |
 * |-----------------------------------------------------------|--------------------------------|
 * | GCS V4: `X-Goog-Date` (`20261122T101500Z`) + `X-Goog-Expires` (s) | date + seconds         |
 * | S3 SigV4: `X-Amz-Date` + `X-Amz-Expires` (s)              | date + seconds                 |
 * | GCS V2, S3 V2, CloudFront canned policy: `Expires` (unix s) | that instant                 |
 * | CloudFront custom policy: `Policy` (base64 JSON, `DateLessThan`) | that instant            |
 * | Azure SAS: `se` (ISO 8601) with `sig`                     | that instant                   |
 * | anything else                                             | response time + the reference's lifetime of the kind |
 *
 * The deadline keeps a safety margin before the expiry for the download itself and for clock
 * skew between harvest and the media host: a tenth of the URL's lifetime, at most
 * `marginMaxMs`.
 */
import { type MediaKind, REFERENCE_LIFETIME_MS } from './kinds.ts';

export type ExpirySource = 'gcs-v4' | 's3-v4' | 'expires' | 'cloudfront-policy' | 'azure-sas';

export interface UrlExpiry {
  /** When the URL stops working, ms since the epoch. */
  expiresAt: number;
  /** When it was signed, if the URL says (V4 forms), ms since the epoch. */
  signedAt?: number;
  source: ExpirySource;
}

/** Share of a URL's lifetime kept free before its expiry. */
export const MARGIN_SHARE = 0.1;

/** `20261122T101500Z` (ISO 8601 basic, UTC) to ms; undefined when malformed. */
export function parseBasicDate(text: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return undefined;
  const ms = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  // Date.UTC rolls month 13 over into the next year: only a date that reads back is one.
  const back = new Date(ms).toISOString().replace(/[-:]|\.\d{3}/g, '');
  return back === text ? ms : undefined;
}

function seconds(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,12}$/.test(text)) return undefined;
  return Number(text);
}

/** Query parameters by lower-cased name (the first of each). */
function params(url: URL): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, value] of url.searchParams) {
    const key = name.toLowerCase();
    if (!out.has(key)) out.set(key, value);
  }
  return out;
}

function dateAndSeconds(p: Map<string, string>, prefix: 'x-goog' | 'x-amz') {
  const date = p.get(`${prefix}-date`);
  const lifeS = seconds(p.get(`${prefix}-expires`));
  const signedAt = date === undefined ? undefined : parseBasicDate(date);
  if (signedAt === undefined || lifeS === undefined) return undefined;
  return { signedAt, expiresAt: signedAt + lifeS * 1000 };
}

/** `DateLessThan` of a CloudFront custom policy (URL-safe base64: `-` `_` `~` for `+` `=` `/`). */
function policyExpiry(policy: string): number | undefined {
  try {
    const b64 = policy.replace(/-/g, '+').replace(/_/g, '=').replace(/~/g, '/');
    const doc = JSON.parse(Buffer.from(b64, 'base64').toString('utf8')) as {
      Statement?: Array<{ Condition?: { DateLessThan?: Record<string, unknown> } }>;
    };
    const epoch = doc.Statement?.[0]?.Condition?.DateLessThan?.['AWS:EpochTime'];
    return typeof epoch === 'number' && Number.isFinite(epoch) ? epoch * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** The largest time a JavaScript Date holds, in ms since the epoch. */
const MAX_DATE_MS = 8.64e15;

/** A time that can be stored and shown: from the epoch up to the largest Date. */
function isInstant(ms: number | undefined): boolean {
  return ms === undefined || (Number.isFinite(ms) && ms >= 0 && ms <= MAX_DATE_MS);
}

/**
 * The expiry a signed URL states about itself, or undefined when it states none. A stated time
 * before 1970 or past the largest Date (a malformed or hostile URL) states none: the URL then
 * lives the reference's lifetime, like any URL that says nothing.
 */
export function urlExpiry(rawUrl: string): UrlExpiry | undefined {
  const stated = statedExpiry(rawUrl);
  return stated && isInstant(stated.expiresAt) && isInstant(stated.signedAt) ? stated : undefined;
}

function statedExpiry(rawUrl: string): UrlExpiry | undefined {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return undefined;
  }
  const p = params(url);
  const goog = dateAndSeconds(p, 'x-goog');
  if (goog) return { ...goog, source: 'gcs-v4' };
  const amz = dateAndSeconds(p, 'x-amz');
  if (amz) return { ...amz, source: 's3-v4' };
  const expires = seconds(p.get('expires'));
  if (expires !== undefined) return { expiresAt: expires * 1000, source: 'expires' };
  const policy = p.get('policy');
  const fromPolicy = policy === undefined ? undefined : policyExpiry(policy);
  if (fromPolicy !== undefined) return { expiresAt: fromPolicy, source: 'cloudfront-policy' };
  const se = p.get('se');
  if (se !== undefined && p.has('sig')) {
    const ms = Date.parse(se);
    if (Number.isFinite(ms)) return { expiresAt: ms, source: 'azure-sas' };
  }
  return undefined;
}

export interface DeadlineInput {
  url: string;
  kind: MediaKind;
  /** When the response carrying the URL arrived, ms since the epoch. */
  receivedAt: number;
  /** Largest safety margin, in ms. */
  marginMaxMs: number;
}

export interface MediaDeadline {
  /** When the URL was issued: its signing time when it says, else when the response arrived. */
  issuedAt: number;
  /** When the URL stops working, ms since the epoch. */
  expiresAt: number;
  /** When the download must have started: the expiry less the safety margin. */
  deadlineAt: number;
  /** Where the expiry came from. */
  source: ExpirySource | 'reference';
}

export function safetyMarginMs(lifetimeMs: number, marginMaxMs: number): number {
  return Math.max(0, Math.min(marginMaxMs, Math.round(lifetimeMs * MARGIN_SHARE)));
}

/** The URL's own expiry where it states one, else the reference's lifetime of the kind. */
export function mediaDeadline(input: DeadlineInput): MediaDeadline {
  const stated = urlExpiry(input.url);
  const issuedAt = stated?.signedAt ?? input.receivedAt;
  const expiresAt = stated?.expiresAt ?? input.receivedAt + REFERENCE_LIFETIME_MS[input.kind];
  const lifetimeMs = Math.max(0, expiresAt - issuedAt);
  return {
    issuedAt,
    expiresAt,
    deadlineAt: expiresAt - safetyMarginMs(lifetimeMs, input.marginMaxMs),
    source: stated?.source ?? 'reference',
  };
}
