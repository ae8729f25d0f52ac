/**
 * GET /media/<id>.<ext>?X-Goog-...: serves the bytes behind a signed URL, or the Cloud Storage
 * XML error (400 ExpiredToken, 403 SignatureDoesNotMatch, 404 NoSuchKey). Counts requests that
 * carry an Authorization header: a client must never send its API key to a media host.
 *
 * Media faults (options.ts `MediaFaults`): a share of answers is 503, and bodies can be sent
 * slowly (`bytesPerSecond`). The ledger keeps the sha256 of each file sent whole.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { mediaErrorXml } from '../media.ts';
import { MEDIA_TYPES, mediaBytes } from '../media-bytes.ts';
import type { SandboxState } from '../state.ts';

/** Chunks of a slow body are sent this often, in ms. */
const SLOW_TICK_MS = 50;

/** The bytes in chunks at `bytesPerSecond`; `onEnd` runs once the last chunk is read. */
function slowBody(bytes: Buffer, bytesPerSecond: number, onEnd: () => void): Readable {
  const chunk = Math.max(1, Math.round((bytesPerSecond * SLOW_TICK_MS) / 1000));
  return Readable.from(
    (async function* () {
      for (let at = 0; at < bytes.length; at += chunk) {
        if (at > 0) await sleep(SLOW_TICK_MS);
        yield bytes.subarray(at, at + chunk);
      }
      onEnd();
    })(),
  );
}

export function mediaRoutes(app: FastifyInstance, state: SandboxState): void {
  app.get('/media/:file', async (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const withAuthorization = request.headers.authorization !== undefined;
    const xml = (status: number, code: string, message: string, details?: string) => {
      state.ledger.mediaRequest(status, withAuthorization);
      return reply
        .code(status)
        .type('application/xml; charset=UTF-8')
        .send(mediaErrorXml(code, message, details));
    };
    if (state.mediaFaults.error503 > 0 && state.random() < state.mediaFaults.error503) {
      return xml(503, 'ServiceUnavailable', 'Service Unavailable (simulated by the sandbox).');
    }
    const check = state.signer.verify(
      path,
      request.query as Record<string, string | undefined>,
      state.options.now(),
    );
    if (!check.ok) return xml(check.status, check.code, check.message, check.details);
    state.ledger.mediaRequest(200, withAuthorization);
    const { ext, contentType } = MEDIA_TYPES[check.kind];
    const bytes = mediaBytes(check.kind, check.id, state.options.mediaPadBytes);
    const file = `${check.id}.${ext}`;
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    reply
      .code(200)
      .type(contentType)
      .header('Content-Length', bytes.length)
      .header('Cache-Control', 'private, max-age=0');
    const rate = state.mediaFaults.bytesPerSecond;
    if (rate === null) {
      state.ledger.mediaServed(file, sha256);
      return reply.send(bytes);
    }
    return reply.send(slowBody(bytes, rate, () => state.ledger.mediaServed(file, sha256)));
  });
}
