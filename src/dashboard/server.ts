/**
 * `harvest dashboard`: Bull Board over every harvest queue (`QUEUES`, so queues added later
 * appear), under the deployment's Redis prefix, on a Fastify server.
 *
 * Read-only unless actions are allowed, twice over: every queue adapter is in Bull Board's
 * read-only mode (the UI hides its buttons and the API answers 405), and the server itself
 * refuses every request that is not GET or HEAD, so an action Bull Board adds in a later
 * version cannot slip through. Basic auth, when configured, comes before everything else, and
 * wrong passwords are slowed per client address (throttle.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import fastifyBasicAuth from '@fastify/basic-auth';
import { Queue } from 'bullmq';
import Fastify, { type FastifyInstance } from 'fastify';
import { HarvestError, UsageError } from '../errors.ts';
import { createRedis } from '../queue/connection.ts';
import { QUEUES } from '../queue/names.ts';
import { RUNS_QUEUE_SETTINGS } from '../schedule/schedulers.ts';
import { type BasicAuthCredentials, fromThisHost } from './access.ts';
import { FailureThrottle, type ThrottleOptions } from './throttle.ts';

export interface DashboardOptions {
  redisUrl: string;
  /** Redis key prefix of the queues (HARVEST_PREFIX). */
  prefix: string;
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /** TCP port; 0 picks a free one. */
  port: number;
  /** Let the dashboard retry, clean, promote, pause and remove. Default false (read-only). */
  allowActions?: boolean;
  /** Asked for on every request when given (see access.ts for when it must be). */
  auth?: BasicAuthCredentials;
  /** How wrong passwords are slowed (throttle.ts). Default THROTTLE_DEFAULTS. */
  throttle?: Partial<ThrottleOptions>;
  /** Queues shown. Default every queue in `QUEUES`. */
  queueNames?: readonly string[];
}

export interface RunningDashboard {
  /** `http://host:port/`, the page to open. */
  readonly url: string;
  readonly readOnly: boolean;
  close(): Promise<void>;
}

const SAFE_METHODS = new Set(['GET', 'HEAD']);
const NOT_FROM_THIS_HOST = {
  error:
    'this dashboard answers requests for 127.0.0.1 or localhost only (set HARVEST_DASHBOARD_USER and HARVEST_DASHBOARD_PASSWORD to serve it under another name)',
};
const READ_ONLY_ANSWER = {
  error: 'read-only dashboard: start it with --allow-actions to retry, clean, pause or remove jobs',
};

export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const host = options.host ?? '127.0.0.1';
  const { port } = options;
  const readOnly = !options.allowActions;
  const redis = createRedis(options.redisUrl, 'client');
  redis.on('error', () => {}); // a Redis that goes away shows as errors in the page
  const queues = (options.queueNames ?? Object.values(QUEUES)).map((name) => {
    // The runs queue with harvest's repeat strategy: `--allow-actions` can edit a schedule.
    const settings = name === QUEUES.runs ? { settings: RUNS_QUEUE_SETTINGS } : {};
    const queue = new Queue(name, { connection: redis, prefix: options.prefix, ...settings });
    queue.on('error', () => {}); // shown in the page, not once per reconnection on stderr
    return queue;
  });
  // A browser keeps its connections open: closing must not wait for them.
  const app = Fastify({ logger: false, forceCloseConnections: true });
  const close = async () => {
    await app.close();
    await Promise.all(queues.map((queue) => queue.close()));
    await redis.quit().catch(() => {});
  };
  try {
    if (options.auth) await requireBasicAuth(app, options.auth, options.throttle);
    else {
      // Open to this host's users: not to a web page that rebinds its name to 127.0.0.1.
      app.addHook('onRequest', (request, reply, done) => {
        if (fromThisHost(request.headers)) done();
        else reply.code(403).send(NOT_FROM_THIS_HOST);
      });
    }
    if (readOnly) {
      app.addHook('onRequest', (request, reply, done) => {
        if (SAFE_METHODS.has(request.method)) done();
        else reply.code(405).header('allow', 'GET, HEAD').send(READ_ONLY_ANSWER);
      });
    }
    const board = new FastifyAdapter();
    createBullBoard({
      queues: queues.map(
        (queue) => new BullMQAdapter(queue, { readOnlyMode: readOnly, allowRetries: !readOnly }),
      ),
      serverAdapter: board,
      options: {
        uiConfig: { boardTitle: readOnly ? 'harvest (read-only)' : 'harvest', hideDocsLink: true },
      },
    });
    board.setBasePath('/');
    await app.register(board.registerPlugin(), { prefix: '/' });
    await listen(app, host, port);
  } catch (error) {
    await close();
    throw error;
  }
  const address = app.server.address();
  const boundPort = typeof address === 'object' && address ? address.port : port;
  const urlHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return { url: `http://${urlHost}:${boundPort}/`, readOnly, close };
}

async function requireBasicAuth(
  app: FastifyInstance,
  auth: BasicAuthCredentials,
  throttleOptions: Partial<ThrottleOptions> | undefined,
): Promise<void> {
  const expected = digest(`${auth.user}:${auth.password}`);
  const throttle = new FailureThrottle(throttleOptions);
  await app.register(fastifyBasicAuth, {
    authenticate: { realm: 'harvest dashboard' },
    async validate(user: string, password: string, request, reply) {
      // The socket's address (no proxy header is trusted): what a guesser cannot choose.
      const client = request.ip;
      const waitMs = throttle.waitMs(client);
      if (waitMs > 0) {
        const retryAfterSec = Math.ceil(waitMs / 1000);
        reply.header('retry-after', String(retryAfterSec));
        throw tooManyFailures(retryAfterSec);
      }
      // equal-length digests: the comparison takes as long whatever was sent
      if (!timingSafeEqual(digest(`${user}:${password}`), expected)) {
        throttle.failed(client);
        throw new Error('wrong user or password');
      }
      throttle.succeeded(client);
    },
  });
  app.addHook('onRequest', app.basicAuth);
}

/** The answer while an address is locked out: 429, its credentials not checked. */
function tooManyFailures(retryAfterSec: number): Error {
  return Object.assign(
    new Error(
      `too many wrong passwords from this address: credentials are checked again in ${retryAfterSec} s`,
    ),
    { statusCode: 429 },
  );
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Listens, turning the environment's refusals into one-line errors with an exit code. */
async function listen(app: FastifyInstance, host: string, port: number): Promise<void> {
  try {
    await app.listen({ host, port });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const where = `${host}:${port}`;
    if (code === 'EADDRINUSE') {
      throw new HarvestError('PORT_IN_USE', `${where} is in use: pick another --port`, {
        cause: error,
        exitCode: 3,
      });
    }
    if (code === 'EACCES') {
      throw new HarvestError(
        'PORT_FORBIDDEN',
        `not allowed to listen on ${where} (ports below 1024 need privileges): pick another --port`,
        { cause: error, exitCode: 3 },
      );
    }
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      throw new UsageError(`cannot listen on ${host}: no such address on this host`, {
        cause: error,
      });
    }
    throw error;
  }
}
