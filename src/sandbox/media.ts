/**
 * Signed media URLs in Google Cloud Storage V4 form, pointing at the sandbox itself:
 * `/media/<id>.<ext>?X-Goog-Algorithm=GOOG4-HMAC-SHA256&X-Goog-Date=...&X-Goog-Expires=...
 * &X-Goog-Signature=...`. The signature is an HMAC-SHA256 (per-process secret) over path, date
 * and lifetime, so a changed expiry fails as `SignatureDoesNotMatch`; an old one as `ExpiredToken`.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { MEDIA_LIFETIME_MS } from '../contract/index.ts';
import { MEDIA_TYPES, type MediaKind } from './media-bytes.ts';

export type { MediaKind };

export interface MediaSigner {
  /**
   * A signed URL for `kind` media of the document at `sourceUrl` (with `#...` telling apart
   * several files of one document), issued at `nowMs`. A `tampered` URL carries a wrong
   * signature, as a URL changed on its way would.
   */
  sign(
    baseUrl: string,
    kind: MediaKind,
    sourceUrl: string,
    nowMs: number,
    options?: { tampered?: boolean },
  ): string;
  verify(path: string, query: Record<string, string | undefined>, nowMs: number): MediaCheck;
}

export type MediaCheck =
  | { ok: true; kind: MediaKind; id: string }
  | { ok: false; status: 400 | 403 | 404; code: string; message: string; details?: string };

/** Lifetimes by file; PDFs of actions live as long as audio and video (the reference is silent). */
const LIFETIME_MS: Record<MediaKind, number> = {
  ...MEDIA_LIFETIME_MS,
  pdf: MEDIA_LIFETIME_MS.audio,
};

/** Lifetime in whole seconds after scaling: ceil, at least 1. */
export function scaledLifetimeS(kind: MediaKind, timeScale: number): number {
  return Math.max(1, Math.ceil((LIFETIME_MS[kind] * timeScale) / 1000));
}

/** The id of a media file: its name in `/media/<id>.<ext>`, and the seed of its bytes. */
export function mediaId(kind: MediaKind, sourceUrl: string): string {
  return createHash('sha256').update(`${kind}\n${sourceUrl}`).digest('hex').slice(0, 32);
}

/** Where a media id falls in [0, 1): a stable draw per file (which files a fault hits). */
export function mediaDraw(id: string): number {
  return Number.parseInt(id.slice(0, 8), 16) / 2 ** 32;
}

/** `20261122T101500Z` */
export function googDate(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/[-:]|\.000/g, '');
}

function parseGoogDate(text: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return undefined;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
}

const KIND_BY_EXT = new Map(
  (Object.keys(MEDIA_TYPES) as MediaKind[]).map((kind) => [MEDIA_TYPES[kind].ext, kind]),
);

export function createMediaSigner(
  timeScale: number,
  secret: Buffer = randomBytes(32),
): MediaSigner {
  // As a V4 signature does, it covers the path and the whole query but the signature itself:
  // changing any parameter (the credential, the algorithm, an added one) breaks it.
  const mac = (path: string, query: Record<string, unknown>) => {
    const canonical = Object.keys(query)
      .filter((key) => key !== 'X-Goog-Signature')
      .sort()
      .map((key) => `${encodeURIComponent(key)}=${encodeURIComponent(String(query[key]))}`)
      .join('&');
    return createHmac('sha256', secret).update(`${path}\n${canonical}`).digest('hex');
  };

  return {
    sign(baseUrl, kind, sourceUrl, nowMs, options = {}) {
      const id = mediaId(kind, sourceUrl);
      const path = `/media/${id}.${MEDIA_TYPES[kind].ext}`;
      const date = googDate(nowMs);
      const query: Record<string, string> = {
        'X-Goog-Algorithm': 'GOOG4-HMAC-SHA256',
        'X-Goog-Credential': `sandbox/${date.slice(0, 8)}/auto/storage/goog4_request`,
        'X-Goog-Date': date,
        'X-Goog-Expires': String(scaledLifetimeS(kind, timeScale)),
        'X-Goog-SignedHeaders': 'host',
      };
      const signature = options.tampered
        ? mac(path, { ...query, 'X-Goog-Expires': `${query['X-Goog-Expires']}0` })
        : mac(path, query);
      const search = new URLSearchParams({ ...query, 'X-Goog-Signature': signature });
      return `${baseUrl}${path}?${search.toString().replace(/\+/g, '%20')}`;
    },

    verify(path, query, nowMs) {
      const m = /^\/media\/([0-9a-f]{32})\.([a-z0-9]+)$/.exec(path);
      const kind = m ? KIND_BY_EXT.get(m[2]!) : undefined;
      if (!m || !kind) {
        return {
          ok: false,
          status: 404,
          code: 'NoSuchKey',
          message: 'The specified key does not exist.',
        };
      }
      const date = query['X-Goog-Date'] ?? '';
      const expires = query['X-Goog-Expires'] ?? '';
      const given = Buffer.from(String(query['X-Goog-Signature'] ?? ''), 'utf8');
      const wanted = Buffer.from(mac(path, query), 'utf8');
      if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) {
        return {
          ok: false,
          status: 403,
          code: 'SignatureDoesNotMatch',
          message:
            'The request signature we calculated does not match the signature you provided. Check your Google secret key and signing method.',
        };
      }
      const startMs = parseGoogDate(date) ?? 0;
      const expiresAtMs = startMs + Number(expires) * 1000;
      if (nowMs >= expiresAtMs) {
        return {
          ok: false,
          status: 400,
          code: 'ExpiredToken',
          message: 'Invalid argument.',
          details: `Request has expired: ${date}`,
        };
      }
      return { ok: true, kind, id: m[1]! };
    },
  };
}

/** The XML error body Cloud Storage sends. */
export function mediaErrorXml(code: string, message: string, details?: string): string {
  return (
    `<?xml version='1.0' encoding='UTF-8'?><Error><Code>${code}</Code><Message>${message}</Message>` +
    (details ? `<Details>${details}</Details>` : '') +
    '</Error>'
  );
}
