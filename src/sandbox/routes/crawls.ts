/** GET /v2/crawl/active, GET /v1/crawl/active, POST /v2/crawl/params-preview. */
import type { FastifyInstance } from 'fastify';
import { ERROR_CODES, ERROR_MESSAGES, ParamsPreviewRequestSchema } from '../../contract/index.ts';
import { activeCrawlsV1, activeCrawlsV2, previewParams } from '../crawls.ts';
import type { SandboxState } from '../state.ts';
import { simulateWork, truncate } from './faults.ts';
import { contextOf, sendJson } from './guard.ts';

/** Listing and preview have no timeout field; simulated latency never turns them into 408. */
const NO_TIMEOUT_MS = Number.POSITIVE_INFINITY;

export function crawlRoutes(app: FastifyInstance, state: SandboxState): void {
  for (const version of ['v1', 'v2'] as const) {
    const list = version === 'v1' ? activeCrawlsV1 : activeCrawlsV2;
    app.get(`/${version}/crawl/active`, async (request, reply) => {
      const { account } = contextOf(request);
      const work = await simulateWork(state, request, reply, {
        timeoutMs: NO_TIMEOUT_MS,
        unknownErrorCode: false,
      });
      if (work.answered) return work.reply;
      const text = JSON.stringify({
        success: true,
        crawls: list(account.team, state.options.seed),
      });
      return sendJson(reply, 200, work.malformed ? truncate(text) : text);
    });
  }

  app.post('/v2/crawl/params-preview', async (request, reply) => {
    const parsed = ParamsPreviewRequestSchema.safeParse(stripClientFields(request.body));
    if (!parsed.success) {
      const problems = parsed.error.issues
        .map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`)
        .join('; ');
      return sendJson(
        reply,
        400,
        JSON.stringify({
          success: false,
          code: ERROR_CODES.badRequest,
          error: `${ERROR_MESSAGES.invalidParams}${problems}`,
        }),
      );
    }
    const work = await simulateWork(state, request, reply, {
      timeoutMs: NO_TIMEOUT_MS,
      unknownErrorCode: false,
    });
    if (work.answered) return work.reply;
    const text = JSON.stringify({
      success: true,
      data: previewParams(parsed.data.url, parsed.data.prompt),
    });
    return sendJson(reply, 200, work.malformed ? truncate(text) : text);
  });
}

/** Clients add `origin` (the official JS client) and `integration` to every body. */
function stripClientFields(body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
  const { origin: _origin, integration: _integration, ...rest } = body as Record<string, unknown>;
  return rest;
}
