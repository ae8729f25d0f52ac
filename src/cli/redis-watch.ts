/**
 * Watching Redis for a command that lives with it (`run --wait`, `worker`): when it stops
 * answering, one line says so (not a flood of client errors: those are dropped from the logs,
 * see `isRedisConnectionLog`); when it answers again, a marker key set at the start says whether
 * it kept its data (a network fault, a restart with persistence: the run goes on by itself) or
 * came back empty (a restart without saving: the queued jobs are gone, and only
 * `harvest run --resume RUN` enqueues them again from SQLite). The marker is also looked at every
 * few seconds while Redis answers: its keys deleted under a live connection (a FLUSHDB, a key
 * evicted under memory pressure) take the queued jobs too, and would otherwise leave a run
 * waiting for them for good.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { maskUrl } from '../config.ts';

export interface RedisWatchEvents {
  /** Redis stopped answering; `reason` is the client's error code or message. */
  lost(where: string, reason: string): void;
  /** Redis answers again; `keptData` false when it came back without what it held. */
  back(keptData: boolean): void;
  /** Redis answers, but what it held is gone (its keys were deleted while it answered). */
  emptied(): void;
}

export interface RedisWatch {
  /** True from a loss until Redis answers again. */
  readonly down: boolean;
  close(): Promise<void>;
}

/** How long the marker outlives a watcher that died without removing it, in seconds. */
const MARKER_TTL_S = 7 * 24 * 3600;
/** How often the marker is looked at while Redis answers, in ms. */
const CHECK_MS = 5000;

/** Starts watching; resolves once the marker is set (Redis must answer at the start). */
export async function watchRedis(
  url: string,
  prefix: string,
  events: RedisWatchEvents,
  options: { retryMs?: number; checkMs?: number; markerTtlS?: number } = {},
): Promise<RedisWatch> {
  const marker = `${prefix}:h:watch:${randomUUID()}`;
  const ttlS = options.markerTtlS ?? MARKER_TTL_S;
  const retryMs = options.retryMs ?? 1000;
  const redis = new Redis(url, {
    connectionName: 'harvest-watch',
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: true,
    retryStrategy: () => retryMs,
  });
  let down = false;
  let lastError = '';
  let closing = false;
  redis.on('error', (error: NodeJS.ErrnoException) => {
    lastError = error.code ?? error.message;
  });
  const onDown = () => {
    if (down || closing) return;
    down = true;
    events.lost(maskUrl(url), lastError || 'connection closed');
  };
  redis.on('close', onDown);
  redis.on('end', onDown);
  await redis.connect();
  await redis.set(marker, '1', 'EX', ttlS);
  redis.on('ready', () => {
    if (!down || closing) return;
    void redis
      .exists(marker)
      .then(async (kept) => {
        if (!kept) await redis.set(marker, '1', 'EX', ttlS);
        down = false;
        events.back(kept === 1);
      })
      .catch(() => {});
  });
  let checking = false;
  const check = setInterval(() => {
    if (down || closing || checking || redis.status !== 'ready') return;
    checking = true;
    // EXPIRE answers whether the marker is there, and keeps it for a command that outlives its
    // time to live (a week-long run).
    redis
      .expire(marker, ttlS)
      .then(async (kept) => {
        if (kept === 1 || down || closing) return;
        await redis.set(marker, '1', 'EX', ttlS);
        if (!closing) events.emptied();
      })
      .catch(() => {})
      .finally(() => {
        checking = false;
      });
  }, options.checkMs ?? CHECK_MS);
  check.unref();
  return {
    get down() {
      return down;
    },
    async close() {
      closing = true;
      clearInterval(check);
      if (redis.status === 'ready') await redis.del(marker).catch(() => {});
      redis.disconnect();
    },
  };
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * Whether a log line only repeats that Redis is not reachable (which the watch says once): an
 * `err` with a connection error code, or ioredis's "Connection is closed".
 */
export function isRedisConnectionLog(line: { err?: unknown }): boolean {
  const err = line.err as { code?: unknown; message?: unknown } | undefined;
  if (!err || typeof err !== 'object') return false;
  if (typeof err.code === 'string' && CONNECTION_CODES.has(err.code)) return true;
  const message = typeof err.message === 'string' ? err.message : '';
  return /Connection is closed|Stream isn't writeable|connect (ECONNREFUSED|ETIMEDOUT)|max retries per request/.test(
    message,
  );
}

/**
 * Whether a log line is BullMQ failing to end a job whose keys are gone ("Missing key for job
 * X. moveToFinished"). Once Redis has lost its data, every job in hand ends so, each with a
 * library stack trace, and the watch has said why in one line: `run` and `worker` drop these
 * lines once Redis went away or was emptied.
 */
export function isMissingJobLog(line: { err?: unknown }): boolean {
  const message = (line.err as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' && message.startsWith('Missing key for job');
}
