/**
 * Runtime control over HTTP, for tests driving a client in another process:
 * GET /_sandbox/ledger, POST /_sandbox/ledger/reset, POST /_sandbox/faults,
 * POST /_sandbox/latency, POST /_sandbox/rate-limit, POST /_sandbox/credits,
 * POST /_sandbox/media-faults, POST /_sandbox/gc, GET and POST /_sandbox/epoch.
 * No authentication: the sandbox is a local test server.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { RATE_LIMIT_MODES } from '../rate-limit.ts';
import type { SandboxState } from '../state.ts';
import { MAX_EPOCH } from '../world-options.ts';

const probability = z.number().min(0).max(1).optional();
const FaultsBody = z.strictObject({
  timeout408: probability,
  error500: probability,
  malformed: probability,
  drop: probability,
});
const LatencyBody = z.strictObject({
  latency: z
    .strictObject({ minMs: z.number().nonnegative(), maxMs: z.number().nonnegative() })
    .nullable(),
});
const RateLimitBody = z.strictObject({
  perMinute: z.int().positive().nullable().optional(),
  maxConcurrency: z.int().positive().nullable().optional(),
  mode: z.enum(RATE_LIMIT_MODES).optional(),
  windowMs: z.int().positive().optional(),
  keepCounts: z.boolean().optional(),
  retryAfterHeader: z.boolean().optional(),
});
const CreditsBody = z.strictObject({ key: z.string(), credits: z.int().nonnegative() });
const MediaFaultsBody = z.strictObject({
  tamper: probability,
  error503: probability,
  bytesPerSecond: z.number().positive().nullable().optional(),
});

/** `{}` or `{"advance": N}` moves the world N epochs on (default 1); `{"epoch": N}` sets it. */
const EpochBody = z
  .strictObject({
    advance: z.int().min(1).max(MAX_EPOCH).optional(),
    epoch: z.int().min(0).max(MAX_EPOCH).optional(),
  })
  .refine((body) => body.advance === undefined || body.epoch === undefined, {
    message: 'give either advance or epoch, not both',
  });

function bad(reply: FastifyReply, message: string) {
  return reply.code(400).send({ success: false, error: message });
}

export function controlRoutes(app: FastifyInstance, state: SandboxState): void {
  const { control } = state;
  const ok = { success: true };
  app.get('/_sandbox/ledger', async () => state.snapshot());
  app.post('/_sandbox/ledger/reset', async () => {
    control.resetLedger();
    return ok;
  });
  app.post('/_sandbox/faults', async (request, reply) => {
    const body = FaultsBody.safeParse(request.body ?? {});
    if (!body.success) return bad(reply, z.prettifyError(body.error));
    try {
      control.setFaults(body.data);
    } catch (error) {
      return bad(reply, (error as Error).message);
    }
    return ok;
  });
  app.post('/_sandbox/latency', async (request, reply) => {
    const body = LatencyBody.safeParse(request.body ?? {});
    if (!body.success) return bad(reply, z.prettifyError(body.error));
    try {
      control.setLatency(body.data.latency ?? undefined);
    } catch (error) {
      return bad(reply, (error as Error).message);
    }
    return ok;
  });
  app.post('/_sandbox/rate-limit', async (request, reply) => {
    const body = RateLimitBody.safeParse(request.body ?? {});
    if (!body.success) return bad(reply, z.prettifyError(body.error));
    control.setRateLimit(body.data);
    return ok;
  });
  app.post('/_sandbox/media-faults', async (request, reply) => {
    const body = MediaFaultsBody.safeParse(request.body ?? {});
    if (!body.success) return bad(reply, z.prettifyError(body.error));
    control.setMediaFaults(body.data);
    return ok;
  });
  // A full garbage collection now, where the process runs with --expose-gc (benchmarks start
  // each measured phase with collected heaps, so no phase pays for another's garbage).
  app.post('/_sandbox/gc', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    return { success: true, collected: gc !== undefined };
  });
  app.get('/_sandbox/epoch', async () => ({
    success: true,
    epoch: control.epoch(),
    shares: state.options.world.shares,
    content: state.options.world.content,
  }));
  app.post('/_sandbox/epoch', async (request, reply) => {
    const body = EpochBody.safeParse(request.body ?? {});
    if (!body.success) return bad(reply, z.prettifyError(body.error));
    const previous = control.epoch();
    try {
      if (body.data.epoch === undefined) control.advanceEpoch(body.data.advance ?? 1);
      else control.setEpoch(body.data.epoch);
    } catch (error) {
      return bad(reply, (error as Error).message);
    }
    return { success: true, epoch: control.epoch(), previous };
  });
  app.post('/_sandbox/credits', async (request, reply) => {
    const body = CreditsBody.safeParse(request.body);
    if (!body.success) return bad(reply, z.prettifyError(body.error));
    try {
      control.setCredits(body.data.key, body.data.credits);
    } catch (error) {
      return bad(reply, (error as Error).message);
    }
    return ok;
  });
}
