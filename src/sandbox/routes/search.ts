/** POST /v2/search. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ERROR_MESSAGES,
  hostedServiceWarnings,
  LIMITS,
  type SearchRequest,
} from '../../contract/index.ts';
import { uuidv7 } from '../ids.ts';
import { answerDataJson, fitToCredits } from '../search.ts';
import type { SandboxState } from '../state.ts';
import { validateSearchRequest } from '../validate.ts';
import { noSimulatedWork, sendTrickled, simulateWork, truncate } from './faults.ts';
import { BODIES, contextOf, type RequestContext, sendJson } from './guard.ts';

const THREAT_PROTECTION_BODY = JSON.stringify({
  success: false,
  error: ERROR_MESSAGES.threatProtectionNotEnabled,
});

/** `__agentInterop` is for the hosted service's own agents: its secret is never the caller's. */
const AGENT_INTEROP_BODY = JSON.stringify({
  success: false,
  error: ERROR_MESSAGES.agentInteropInvalid,
});

export function searchRoutes(app: FastifyInstance, state: SandboxState): void {
  // A plain function: on the common path the answer is sent before it returns, and returning
  // nothing spares Fastify from awaiting the reply.
  app.post('/v2/search', (request, reply) => {
    const ctx = contextOf(request);
    const validation = validateSearchRequest(request.body);
    if (!validation.ok) {
      sendJson(reply, 400, JSON.stringify(validation.body));
      return;
    }
    const body = validation.request;
    if (state.options.hostedRules) {
      const refused = hostedRefusal(body);
      if (refused) {
        sendJson(reply, 400, refused);
        return;
      }
    }
    if (body.__agentInterop) {
      sendJson(reply, 403, AGENT_INTEROP_BODY);
      return;
    }
    if (
      (body.threatProtection || body.scrapeOptions?.threatProtection) &&
      !ctx.account.threatProtection
    ) {
      sendJson(reply, 403, THREAT_PROTECTION_BODY);
      return;
    }
    const fit = fitToCredits(body, ctx.account.credits);
    if (!fit.ok) {
      sendJson(reply, 402, BODIES.insufficientCredits);
      return;
    }
    // Without latency or faults there is nothing to draw or wait for.
    if (noSimulatedWork(state)) {
      answer(state, request, reply, ctx, fit, false);
      return;
    }
    return simulateWork(state, request, reply, {
      timeoutMs: body.timeout ?? LIMITS.search.timeoutDefaultMs,
      unknownErrorCode: true,
    }).then((work) =>
      work.answered ? work.reply : answer(state, request, reply, ctx, fit, work.malformed),
    );
  });
}

/** The hosted service's 400 for a body the reference accepts and it does not, or undefined. */
function hostedRefusal(body: SearchRequest): string | undefined {
  const warnings = hostedServiceWarnings(body);
  if (warnings.length === 0) return undefined;
  return JSON.stringify({
    success: false,
    error: ERROR_MESSAGES.invalidBody,
    details: warnings.map((w) => ({ code: 'custom', path: w.path, message: w.message })),
  });
}

function answer(
  state: SandboxState,
  request: FastifyRequest,
  reply: FastifyReply,
  ctx: RequestContext,
  fit: { request: SearchRequest; loweredFrom?: number },
  malformed: boolean,
): FastifyReply {
  const generated = state.engine.generate(fit.request, state.epoch);
  const nowMs = state.options.now();
  const data = answerDataJson(generated, {
    signer: state.signer,
    baseUrl: () => `${request.protocol}://${request.host}`,
    nowMs,
    tamperShare: state.mediaFaults.tamper,
  });
  const warning =
    fit.loweredFrom === undefined
      ? ''
      : `,"warning":${JSON.stringify(`limit lowered from ${fit.loweredFrom} to ${fit.request.limit} to fit the remaining credits`)}`;
  // An implausible bill when the sandbox is told to answer one (options.inflatedCredits).
  const creditsUsed = state.options.inflatedCredits ?? generated.creditsUsed;
  ctx.charge = creditsUsed;
  const text = `{"success":true,"data":${data},"creditsUsed":${creditsUsed},"id":"${uuidv7(nowMs)}"${warning}}`;
  const trickle = state.options.apiTrickleBytesPerSecond;
  if (trickle) return sendTrickled(reply, 200, text, trickle);
  return sendJson(reply, 200, malformed ? truncate(text) : text);
}
