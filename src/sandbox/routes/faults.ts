/**
 * Simulated work and injected faults of an API request: latency (answering 408 when it exceeds
 * the request's timeout), then at most one drawn fault: 408, 500, a dropped connection, or a
 * malformed 200 (returned to the caller, which truncates its body after charging).
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_CODES, ERROR_MESSAGES, unknownErrorMessage } from '../../contract/index.ts';
import { drawFault, drawLatencyMs, sleep } from '../faults.ts';
import { uuidv7 } from '../ids.ts';
import type { SandboxState } from '../state.ts';
import { dropConnection, sendJson } from './guard.ts';

export const TIMEOUT_BODY = JSON.stringify({
  success: false,
  code: ERROR_CODES.scrapeTimeout,
  error: ERROR_MESSAGES.scrapeTimeout,
});

export type WorkOutcome =
  | { answered: true; reply: FastifyReply }
  | { answered: false; malformed: boolean };

export interface WorkOptions {
  /** The request's own timeout in ms; latency beyond it answers 408. */
  timeoutMs: number;
  /** 500 bodies carry `code: UNKNOWN_ERROR` (search) or not (crawl listing). */
  unknownErrorCode: boolean;
}

/** No latency and no faults are set: `simulateWork` would draw nothing and wait for nothing. */
export function noSimulatedWork(state: SandboxState): boolean {
  const { faults } = state;
  return (
    state.latency === undefined &&
    faults.timeout408 + faults.error500 + faults.malformed + faults.drop === 0
  );
}

export async function simulateWork(
  state: SandboxState,
  request: FastifyRequest,
  reply: FastifyReply,
  options: WorkOptions,
): Promise<WorkOutcome> {
  const latencyMs = drawLatencyMs(state.latency, state.random);
  const fault = drawFault(state.faults, state.random);
  await sleep(Math.min(latencyMs, options.timeoutMs));
  if (fault === 'drop') return { answered: true, reply: dropConnection(state, request, reply) };
  if (fault === 'timeout408' || latencyMs > options.timeoutMs) {
    return { answered: true, reply: sendJson(reply, 408, TIMEOUT_BODY) };
  }
  if (fault === 'error500') {
    const body = options.unknownErrorCode
      ? { success: false, code: ERROR_CODES.unknownError, error: unknownErrorMessage(uuidv7()) }
      : { success: false, error: unknownErrorMessage(uuidv7()) };
    return { answered: true, reply: sendJson(reply, 500, JSON.stringify(body)) };
  }
  return { answered: false, malformed: fault === 'malformed' };
}

/** A 200 body cut in half: what a client sees when a response breaks off mid-way. */
export function truncate(body: string): string {
  return body.slice(0, Math.max(1, Math.floor(body.length / 2)));
}

/**
 * Sends a JSON answer whose body trickles at `bytesPerSecond` (at least one byte a tick): the
 * headers at once, then the bytes, as a slow peer does. The body stops when the client goes.
 */
export function sendTrickled(
  reply: FastifyReply,
  status: number,
  body: string,
  bytesPerSecond: number,
): FastifyReply {
  const bytes = Buffer.from(body);
  const chunk = Math.max(1, Math.floor(bytesPerSecond / 10));
  const tickMs = Math.max(1, Math.round((1000 * chunk) / bytesPerSecond));
  const stream = Readable.from(
    (async function* () {
      for (let at = 0; at < bytes.length; at += chunk) {
        if (at > 0) await sleep(tickMs);
        yield bytes.subarray(at, at + chunk);
      }
    })(),
  );
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .header('content-length', bytes.length)
    .send(stream);
}
