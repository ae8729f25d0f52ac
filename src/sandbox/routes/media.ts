/**
 * GET /media/<id>.<ext>?X-Goog-...: serves the bytes behind a signed URL, or the Cloud Storage
 * XML error (400 ExpiredToken, 403 SignatureDoesNotMatch, 404 NoSuchKey). Counts requests that
 * carry an Authorization header: a client must never send its API key to a media host.
 */
import type { FastifyInstance } from 'fastify';
import { mediaErrorXml } from '../media.ts';
import { MEDIA_TYPES, mediaBytes } from '../media-bytes.ts';
import type { SandboxState } from '../state.ts';

export function mediaRoutes(app: FastifyInstance, state: SandboxState): void {
  app.get('/media/:file', async (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const check = state.signer.verify(
      path,
      request.query as Record<string, string | undefined>,
      state.options.now(),
    );
    const withAuthorization = request.headers.authorization !== undefined;
    if (!check.ok) {
      state.ledger.mediaRequest(check.status, withAuthorization);
      return reply
        .code(check.status)
        .type('application/xml; charset=UTF-8')
        .send(mediaErrorXml(check.code, check.message, check.details));
    }
    state.ledger.mediaRequest(200, withAuthorization);
    return reply
      .code(200)
      .type(MEDIA_TYPES[check.kind].contentType)
      .header('Cache-Control', 'private, max-age=0')
      .send(mediaBytes(check.kind, check.id));
  });
}
