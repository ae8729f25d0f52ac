/**
 * What every API endpoint does before its body is read, in the hosted service's order: auth
 * (401), rate and concurrency limits (429), an empty balance (402). Also the per-request
 * context, ledger entries and charges, written when the answer is sent.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ERROR_MESSAGES, rateLimitMessage } from '../../contract/index.ts';
import type { Account } from '../auth.ts';
import type { SandboxState } from '../state.ts';

export interface RequestContext {
  account: Account;
  /** Credits to charge if the answer is a 200. */
  charge: number;
  /** The concurrency slot is still held. */
  holding: boolean;
}

const contexts = new WeakMap<FastifyRequest, RequestContext>();

export function contextOf(request: FastifyRequest): RequestContext {
  const ctx = contexts.get(request);
  if (!ctx) throw new Error('API route without the guard');
  return ctx;
}

export const BODIES = {
  tokenMissing: JSON.stringify({ success: false, error: ERROR_MESSAGES.tokenMissing }),
  invalidToken: JSON.stringify({ success: false, error: ERROR_MESSAGES.invalidToken }),
  insufficientCredits: JSON.stringify({
    success: false,
    error: ERROR_MESSAGES.insufficientCredits,
  }),
};

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type(JSON_TYPE).send(body);
}

/**
 * The onRequest hook of the API scope. Callback style: an early answer is sent and `done` is not
 * called, which ends the hook chain without a promise per request.
 */
export function createGuard(state: SandboxState) {
  return function guard(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    const auth = state.accounts.authenticate(request.headers.authorization);
    if (!auth.ok) {
      const missing = auth.reason === 'missing';
      state.ledger.answered(undefined, 401);
      reply.header(
        'WWW-Authenticate',
        missing ? 'Bearer realm="api"' : 'Bearer realm="api", error="invalid_token"',
      );
      sendJson(reply, 401, missing ? BODIES.tokenMissing : BODIES.invalidToken);
      return;
    }
    const { account } = auth;
    const rejection = state.limiter.admit(account.team, state.options.now());
    if (rejection) {
      state.ledger.answered(account.team, 429);
      if (state.retryAfterHeader) reply.header('Retry-After', String(rejection.retryAfterS));
      sendJson(reply, 429, JSON.stringify({ success: false, error: rateLimitMessage(rejection) }));
      return;
    }
    const ctx: RequestContext = { account, charge: 0, holding: true };
    contexts.set(request, ctx);
    if (account.credits <= 0) {
      sendJson(reply, 402, BODIES.insufficientCredits);
      return;
    }
    done();
  };
}

/** Frees the request's concurrency slot once. */
export function release(state: SandboxState, ctx: RequestContext): void {
  if (!ctx.holding) return;
  ctx.holding = false;
  state.limiter.release(ctx.account.team);
}

/** The onSend hook of the API scope: ledger entry, charge (200 only), slot release. */
export function createSettle(state: SandboxState) {
  return function settle(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (error: null, payload: unknown) => void,
  ): void {
    const ctx = contexts.get(request);
    // 401/429 are recorded by the guard
    if (ctx?.holding) {
      release(state, ctx);
      const charged = reply.statusCode === 200 ? ctx.charge : 0;
      if (charged > 0) state.accounts.charge(ctx.account, charged);
      state.ledger.answered(ctx.account.team, reply.statusCode, charged);
    }
    done(null, payload);
  };
}

/** Destroys the connection without an answer (the `drop` fault); not charged. */
export function dropConnection(state: SandboxState, request: FastifyRequest, reply: FastifyReply) {
  const ctx = contextOf(request);
  release(state, ctx);
  state.ledger.dropped(ctx.account.team);
  reply.hijack();
  request.raw.socket.destroy();
  return reply;
}
