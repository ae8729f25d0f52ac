/**
 * The sandbox: a local HTTP server speaking the Web Data Service API contract (search, active
 * crawls, params preview), with bearer keys per team, credit balances, exact error bodies,
 * deterministic results, signed media it serves itself and that really expire, injectable
 * faults, and a ledger of what it answered and billed.
 *
 * Routes: POST /v2/search, GET /v2/crawl/active, GET /v1/crawl/active,
 * POST /v2/crawl/params-preview, GET /media/<id>.<ext> (signed), and /_sandbox/... (control).
 */
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { ERROR_CODES, ERROR_MESSAGES, LIMITS, unknownErrorMessage } from '../contract/index.ts';
import { HarvestError, UsageError } from '../errors.ts';
import { uuidv7 } from './ids.ts';
import type { LedgerSnapshot } from './ledger.ts';
import { resolveOptions, type SandboxKey, type SandboxOptions } from './options.ts';
import { controlRoutes } from './routes/control.ts';
import { crawlRoutes } from './routes/crawls.ts';
import { createGuard, createSettle, sendJson } from './routes/guard.ts';
import { mediaRoutes } from './routes/media.ts';
import { searchRoutes } from './routes/search.ts';
import { createState, type SandboxControl } from './state.ts';

export type { LedgerSnapshot, TeamLedger } from './ledger.ts';
export type {
  FaultRates,
  LatencyRange,
  MediaFaults,
  SandboxKey,
  SandboxOptions,
} from './options.ts';
export {
  DEFAULT_CLI_PORT,
  DEFAULT_KEY,
  parseCount,
  parseFaults,
  parseKeys,
  parseLatency,
  parsePositive,
} from './options.ts';
export type { RateLimitUpdate, SandboxControl } from './state.ts';

/** What a sandbox app exposes besides its routes. */
export interface SandboxHandle {
  /** The accepted keys with their starting balances. */
  keys: SandboxKey[];
  /** A copy of the ledger: answers by status and credits charged, per team; media requests. */
  ledger(): LedgerSnapshot;
  control: SandboxControl;
}

export type SandboxApp = FastifyInstance & { sandbox: SandboxHandle };

export interface RunningSandbox extends SandboxHandle {
  /** `http://HOST:PORT`, no trailing slash. */
  url: string;
  close(): Promise<void>;
}

const MALFORMED_JSON_BODY = JSON.stringify({
  success: false,
  code: ERROR_CODES.badRequestInvalidJson,
  error: ERROR_MESSAGES.malformedJson,
});
const TOO_LARGE_BODY = JSON.stringify({ success: false, error: ERROR_MESSAGES.tooLarge });
const INVALID_JSON = 'SANDBOX_INVALID_JSON';

/** A Fastify instance with every sandbox route (not listening; use `inject()` or `listen()`). */
export function buildSandboxApp(options: SandboxOptions = {}): SandboxApp {
  const state = createState(resolveOptions(options));
  const app = Fastify({
    logger: false,
    bodyLimit: LIMITS.requestBodyMaxBytes,
    return503OnClosing: false,
  });

  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch {
      const error = new Error(ERROR_MESSAGES.malformedJson) as FastifyError;
      error.code = INVALID_JSON;
      error.statusCode = 400;
      done(error, undefined);
    }
  });
  app.setErrorHandler(errorHandler);

  app.register(async (api) => {
    api.addHook('onRequest', createGuard(state));
    api.addHook('onSend', createSettle(state));
    searchRoutes(api, state);
    crawlRoutes(api, state);
  });
  mediaRoutes(app, state);
  controlRoutes(app, state);

  const handle: SandboxHandle = {
    keys: state.options.keys.map((k) => ({ ...k })),
    ledger: () => state.snapshot(),
    control: state.control,
  };
  app.decorate('sandbox', handle);
  return app as unknown as SandboxApp;
}

function errorHandler(
  this: FastifyInstance,
  error: FastifyError,
  _request: unknown,
  reply: import('fastify').FastifyReply,
) {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || error.statusCode === 413) {
    return sendJson(reply, 413, TOO_LARGE_BODY);
  }
  if (error.code === INVALID_JSON || error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return sendJson(reply, 400, MALFORMED_JSON_BODY);
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return sendJson(
      reply,
      error.statusCode,
      JSON.stringify({ success: false, error: error.message }),
    );
  }
  return sendJson(
    reply,
    500,
    JSON.stringify({
      success: false,
      code: ERROR_CODES.unknownError,
      error: unknownErrorMessage(uuidv7()),
    }),
  );
}

/**
 * Listens, turning the refusals a person can act on into one line with an exit code: a port in
 * use or not allowed (3, the environment), a port or an address that cannot be (2, bad input).
 */
async function listen(app: FastifyInstance, host: string, port: number): Promise<void> {
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new UsageError(
      `--port ${port}: a port is a whole number from 0 to 65535 (0 picks a free one)`,
    );
  }
  try {
    await app.listen({ port, host });
  } catch (error) {
    await app.close().catch(() => {});
    const code = (error as { code?: unknown }).code;
    const where = `${host}:${port}`;
    if (code === 'EADDRINUSE') {
      throw new HarvestError(
        'PORT_IN_USE',
        `${where} is in use (another sandbox?): pick another --port, or --port 0 for a free one`,
        { cause: error, exitCode: 3 },
      );
    }
    if (code === 'EACCES' || code === 'EPERM') {
      throw new HarvestError(
        'PORT_FORBIDDEN',
        `not allowed to listen on ${where} (ports below 1024 need privileges): pick another --port`,
        { cause: error, exitCode: 3 },
      );
    }
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      throw new UsageError(`cannot listen on ${host}: no such address on this host (--host)`, {
        cause: error,
      });
    }
    throw error;
  }
}

/** Builds the app and listens; `port: 0` picks a free port (read it from `url`). */
export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const app = buildSandboxApp(options);
  const host = options.host ?? '127.0.0.1';
  await listen(app, host, options.port ?? 0);
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const urlHost =
    host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return {
    ...app.sandbox,
    url: `http://${urlHost}:${port}`,
    close: async () => {
      await app.close();
    },
  };
}
