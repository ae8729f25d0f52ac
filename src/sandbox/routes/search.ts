/** POST /v2/search. */
import type { FastifyInstance } from 'fastify';
import {
  ERROR_MESSAGES,
  invalidBodyError,
  LIMITS,
  SearchRequestSchema,
} from '../../contract/index.ts';
import { uuidv7 } from '../ids.ts';
import { answerDataJson, fitToCredits } from '../search.ts';
import type { SandboxState } from '../state.ts';
import { simulateWork, truncate } from './faults.ts';
import { BODIES, contextOf, sendJson } from './guard.ts';

const THREAT_PROTECTION_BODY = JSON.stringify({
  success: false,
  error: ERROR_MESSAGES.threatProtectionNotEnabled,
});

export function searchRoutes(app: FastifyInstance, state: SandboxState): void {
  app.post('/v2/search', async (request, reply) => {
    const ctx = contextOf(request);
    const parsed = SearchRequestSchema.safeParse(request.body);
    if (!parsed.success) {
      return sendJson(reply, 400, JSON.stringify(invalidBodyError(parsed.error)));
    }
    const body = parsed.data;
    if (
      (body.threatProtection || body.scrapeOptions?.threatProtection) &&
      !ctx.account.threatProtection
    ) {
      return sendJson(reply, 403, THREAT_PROTECTION_BODY);
    }
    const fit = fitToCredits(body, ctx.account.credits);
    if (!fit.ok) return sendJson(reply, 402, BODIES.insufficientCredits);

    const work = await simulateWork(state, request, reply, {
      timeoutMs: body.timeout ?? LIMITS.search.timeoutDefaultMs,
      unknownErrorCode: true,
    });
    if (work.answered) return work.reply;

    const generated = state.engine.generate(fit.request);
    const nowMs = state.options.now();
    const data = answerDataJson(
      generated,
      state.signer,
      `${request.protocol}://${request.host}`,
      nowMs,
    );
    const warning =
      fit.loweredFrom === undefined
        ? ''
        : `,"warning":${JSON.stringify(`limit lowered from ${fit.loweredFrom} to ${fit.request.limit} to fit the remaining credits`)}`;
    ctx.charge = generated.creditsUsed;
    const text = `{"success":true,"data":${data},"creditsUsed":${generated.creditsUsed},"id":"${uuidv7(nowMs)}"${warning}}`;
    return sendJson(reply, 200, work.malformed ? truncate(text) : text);
  });
}
