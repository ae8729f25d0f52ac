/**
 * Settings, parsed once from the environment into a frozen object that is passed down.
 * Nothing else in harvest reads `process.env`.
 */
import path from 'node:path';
import { z } from 'zod';

/** A `redis:` or `rediss:` URL the URL parser takes (a port, when given, is a number). */
function isRedisUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * Steps of an API call's life at which `HARVEST_TEST_KILL_AT` makes a worker kill itself
 * (jobs/search/kill-points.ts). For tests only.
 */
export const KILL_POINTS = [
  'claimed',
  'journaled',
  'request-written',
  'answer-read',
  'record-handed-over',
  'journal-cleared',
] as const;
export type KillPoint = (typeof KILL_POINTS)[number];

const EnvSchema = z.object({
  HARVEST_API_URL: z
    .url({
      protocol: /^https?$/,
      error: 'an http:// or https:// address, e.g. https://api.firecrawl.dev',
    })
    .refine(
      (url) => !URL.canParse(url) || !/\/v\d+\/?$/.test(new URL(url).pathname),
      'the base address without its version segment: harvest adds /v2 (https://api.firecrawl.dev, not https://api.firecrawl.dev/v2)',
    )
    .default('https://api.firecrawl.dev'),
  HARVEST_API_KEY: z
    .string()
    .regex(/^\S+$/, 'contains whitespace (a stray space or newline when it was copied?)')
    .optional(),
  HARVEST_MAX_RESPONSE_BYTES: wholeNumber(1024, Number.MAX_SAFE_INTEGER).optional(),
  HARVEST_API_PROBE_MAX_MS: wholeNumber(100, 3_600_000).default(180_000),
  HARVEST_MAX_RATE_HOLD_MS: wholeNumber(1000, 86_400_000).default(600_000),
  REDIS_URL: z
    .string()
    .refine(isRedisUrl, 'a redis:// or rediss:// address, e.g. redis://127.0.0.1:6379')
    .default('redis://127.0.0.1:6379'),
  HARVEST_DATA_DIR: z.string().default('data'),
  HARVEST_DB: z.string().optional(),
  HARVEST_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, dot, dash and underscore only')
    .default('harvest'),
  HARVEST_NOTIFY_SECRET: z
    .string()
    .min(16, 'at least 16 characters (a random string: `openssl rand -hex 32`)')
    .optional(),
  HARVEST_NOTIFY_ATTEMPTS: wholeNumber(1, 50).default(10),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  HARVEST_DASHBOARD_USER: z
    .string()
    .regex(/^[^:\p{Cc}]+$/u, 'no colon and no control characters (HTTP basic auth)')
    .optional(),
  HARVEST_DASHBOARD_PASSWORD: z
    .string()
    .regex(/^\P{Cc}+$/u, 'no control characters (HTTP basic auth)')
    .optional(),
  HARVEST_QUEUE_WINDOW: wholeNumber(1, 10_000_000).default(10_000),
  HARVEST_MEDIA_CONCURRENCY: wholeNumber(1, 1000).default(8),
  HARVEST_MEDIA_MAX_REISSUES: wholeNumber(0, 100).default(2),
  HARVEST_MEDIA_MAX_ATTEMPTS: wholeNumber(1, 100).default(6),
  HARVEST_MEDIA_MARGIN_MS: wholeNumber(0, 86_400_000).default(300_000),
  HARVEST_MEDIA_TIMEOUT_MS: wholeNumber(100, 3_600_000).default(30_000),
  HARVEST_MEDIA_MAX_TRANSFER_MS: wholeNumber(100, 86_400_000).default(600_000),
  HARVEST_API_TIMEOUT_MS: wholeNumber(100, 3_600_000).default(65_000),
  HARVEST_STOP_GRACE_MS: wholeNumber(0, 3_600_000).default(30_000),
  HARVEST_CREDITS_ANOMALY_FACTOR: wholeNumber(1, 1_000_000).default(10),
  HARVEST_TEST_KILL_AT: z.enum(KILL_POINTS).optional(),
  HARVEST_MEDIA_MAX_REDIRECTS: wholeNumber(0, 20).default(5),
  HARVEST_MEDIA_URGENT_MS: wholeNumber(0, 86_400_000).default(60_000),
  HARVEST_MEDIA_ALLOW_HOSTS: hostList(),
  HARVEST_NOTIFY_ALLOW_HOSTS: hostList(),
});

/** Comma-separated hosts exempt from the address rule (src/media/address.ts `hostAllowed`). */
function hostList() {
  return z
    .string()
    .default('')
    .transform((text) =>
      text
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z
          .string()
          .regex(
            /^(\*\.)?[A-Za-z0-9.:[\]-]+$/,
            'host names (or *.suffix, or IP literals; each with :port or not) separated by commas',
          ),
      ),
    );
}

/** A whole number in [min, max] written in the environment. */
function wholeNumber(min: number, max: number) {
  return z
    .string()
    .regex(/^\d+$/, 'a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

/** Media downloads (see src/media/); each from a `HARVEST_MEDIA_*` variable. */
export interface MediaSettings {
  /**
   * Downloads in flight at once per process: transfers, from request to last byte (the media
   * role holds more jobs than this; src/media/slots.ts). Default 8.
   */
  readonly concurrency: number;
  /** Fresh URLs fetched per media item by calling its search again. Default 2. */
  readonly maxReissues: number;
  /** Downloads of one URL before a transient failure (5xx, reset, timeout) is final. Default 6. */
  readonly maxAttempts: number;
  /** Largest safety margin kept before a URL's expiry, in ms. Default 300000 (5 min). */
  readonly marginMaxMs: number;
  /** Longest wait for a media host's headers, and for each pause in a body, in ms. Default 30000. */
  readonly timeoutMs: number;
  /**
   * Longest one transfer takes, from its request to its last byte, in ms; a transfer also ends
   * by its URL's deadline (src/media/download.ts). Default 600000 (10 min).
   */
  readonly maxTransferMs: number;
  /** Redirects followed per download. Default 5. */
  readonly maxRedirects: number;
  /**
   * Media due within this many ms is urgent: while some waits in the media queue, searches in the
   * same process wait (0: never). Default 60000.
   */
  readonly urgentMs: number;
  /**
   * Hosts exempt from the address rule (private, loopback, link-local, metadata addresses are
   * otherwise refused): `name`, `*.suffix` or an IP literal, on any port or on the one given
   * (`10.0.0.5:8080`). The API's own host is always exempt, on the API's port.
   */
  readonly allowHosts: readonly string[];
}

export interface Settings {
  /** Base address of the Web Data Service API, without the version segment. */
  readonly apiUrl: string;
  /** Bearer key for the API. Never logged, stored or exported. */
  readonly apiKey: string | undefined;
  /** Largest API response read, in bytes; larger ones fail as RESPONSE_TOO_LARGE. Default 64 MiB. */
  readonly maxResponseBytes: number | undefined;
  /**
   * Longest wait between two probes of an unreachable API, in ms: while it is unreachable the
   * search queue waits, and probes come 1 s, 2 s, 4 s ... apart up to this (src/queue/circuit.ts).
   * Default 180000 (3 min).
   */
  readonly apiProbeMaxMs: number;
  /**
   * Longest a rate limit holds an API key's calls, in ms: a longer wait (a 429's Retry-After, a
   * window's reset) is cut to it and logged as capped. Default 600000 (10 min).
   */
  readonly maxRateHoldMs: number;
  /** Redis connection string for the queues. Default `redis://127.0.0.1:6379`. */
  readonly redisUrl: string;
  /** Folder for the database and saved media. Default `./data`. */
  readonly dataDir: string;
  /** SQLite database file. Default `<dataDir>/harvest.db`. */
  readonly dbPath: string;
  /** Redis key prefix of every queue, so several users or tests can share one Redis. */
  readonly queuePrefix: string;
  /**
   * Key of the HMAC-SHA256 signature of webhook notifications (`schedule.notify`); without it
   * nothing is sent (a delivery is recorded as failed). Never logged.
   */
  readonly notifySecret: string | undefined;
  /** Delivery attempts of one webhook notification, with exponential backoff. Default 10. */
  readonly notifyAttempts: number;
  /**
   * Hosts webhooks may reach although the address rule refuses their address (loopback,
   * private, metadata, ...; src/media/address.ts): `name`, `*.suffix` or an IP literal, on any
   * port or on the one given (`10.0.0.5:8080`, `[::1]:8080`). Separate from the media list: a
   * receiver on the operators' network is no host an API answer should make a worker fetch.
   */
  readonly notifyAllowHosts: readonly string[];
  /**
   * Search jobs Redis holds at once (waiting, delayed, active), in jobs. A run with more
   * unfinished tasks than this is fed from SQLite as its jobs end (src/run/feed/feeder.ts); a run
   * with fewer is enqueued whole. About 1.4 KB of Redis memory per job. Set it to a few times
   * the pool's total search concurrency when that is larger. Default 10000.
   */
  readonly queueWindow: number;
  /** pino log level; when unset each command picks its own (`worker` info, others warn). */
  readonly logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
  /** Log lines: `auto` (default; human-readable on a terminal, JSON otherwise), `json`, `pretty`. */
  readonly logFormat: z.infer<typeof EnvSchema>['LOG_FORMAT'];
  /**
   * Basic-auth credentials of `harvest dashboard`: required when it listens beyond loopback,
   * and asked for whenever they are set. Never logged. Default none.
   */
  readonly dashboardAuth: { readonly user: string; readonly password: string } | undefined;
  readonly media: MediaSettings;
  /**
   * Longest an API call whose request sets no `timeout` takes, headers and whole body, in ms; a
   * search that sets one ends by its `timeout` plus a margin. Default 65000.
   */
  readonly apiTimeoutMs: number;
  /**
   * After a first Ctrl-C or SIGTERM, how long calls in flight may take to finish before the stop
   * is forced as by a second one (transfers end, calls in flight are recorded LOST), in ms.
   * Default 30000.
   */
  readonly stopGraceMs: number;
  /**
   * An answer whose `creditsUsed` is above its request's most possible cost times this is
   * implausible: stored as billed, flagged as an anomaly, and counted against a budget at that
   * most possible cost (src/events/call.ts). Default 10.
   */
  readonly creditsAnomalyFactor: number;
  /**
   * For tests only: the step of an API call's life at which a worker kills itself with SIGKILL
   * (jobs/search/kill-points.ts). Unset in real use.
   */
  readonly testKillAt: KillPoint | undefined;
}

export class SettingsError extends Error {
  readonly code = 'SETTINGS_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

/**
 * The secrets the environment holds, for scrubbing them from what harvest prints, read even
 * when the settings do not parse: the API key, the Redis password, the webhook and dashboard
 * secrets.
 */
export function secretsOf(env: NodeJS.ProcessEnv = process.env): string[] {
  const secrets = [env.HARVEST_API_KEY, env.HARVEST_NOTIFY_SECRET, env.HARVEST_DASHBOARD_PASSWORD];
  const password = redisPassword(env.REDIS_URL);
  if (password) secrets.push(password, encodeURIComponent(password));
  return secrets.filter((s): s is string => typeof s === 'string' && s.length > 0);
}

/**
 * The password of a Redis address: before the `@`, or as its `password` query parameter, which
 * ioredis also logs in with.
 */
function redisPassword(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const parsed = new URL(url);
    if (parsed.password) return decodeURIComponent(parsed.password);
    return parsed.searchParams.get('password') || undefined;
  } catch {
    return undefined;
  }
}

/** `url` with its password (if any, either form) shown as `***`: how a Redis address is printed. */
export function maskUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password && !parsed.searchParams.has('password')) return url;
    if (parsed.password) parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString().replace('password=%2A%2A%2A', 'password=***');
  } catch {
    // Not a URL: print nothing of what may be a secret after the scheme.
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const parsed = EnvSchema.safeParse(
    Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')),
  );
  if (!parsed.success) {
    // One line, as every message of a command: each variable and what is wrong with it.
    const problems = parsed.error.issues.map(
      (i) => `${i.path.join('.')}: ${i.message.replace(/\s*\n\s*/g, ' ')}`,
    );
    throw new SettingsError(`invalid environment: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  if ((e.HARVEST_DASHBOARD_USER === undefined) !== (e.HARVEST_DASHBOARD_PASSWORD === undefined)) {
    throw new SettingsError(
      'invalid environment: HARVEST_DASHBOARD_USER and HARVEST_DASHBOARD_PASSWORD go together: set both or neither',
    );
  }
  const dataDir = path.resolve(e.HARVEST_DATA_DIR);
  return Object.freeze({
    apiUrl: e.HARVEST_API_URL.replace(/\/+$/, ''),
    apiKey: e.HARVEST_API_KEY,
    maxResponseBytes: e.HARVEST_MAX_RESPONSE_BYTES,
    apiProbeMaxMs: e.HARVEST_API_PROBE_MAX_MS,
    maxRateHoldMs: e.HARVEST_MAX_RATE_HOLD_MS,
    redisUrl: e.REDIS_URL,
    dataDir,
    dbPath: path.resolve(e.HARVEST_DB ?? path.join(dataDir, 'harvest.db')),
    queuePrefix: e.HARVEST_PREFIX,
    notifySecret: e.HARVEST_NOTIFY_SECRET,
    notifyAttempts: e.HARVEST_NOTIFY_ATTEMPTS,
    notifyAllowHosts: Object.freeze(e.HARVEST_NOTIFY_ALLOW_HOSTS),
    queueWindow: e.HARVEST_QUEUE_WINDOW,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    dashboardAuth:
      e.HARVEST_DASHBOARD_USER !== undefined && e.HARVEST_DASHBOARD_PASSWORD !== undefined
        ? Object.freeze({ user: e.HARVEST_DASHBOARD_USER, password: e.HARVEST_DASHBOARD_PASSWORD })
        : undefined,
    media: Object.freeze({
      concurrency: e.HARVEST_MEDIA_CONCURRENCY,
      maxReissues: e.HARVEST_MEDIA_MAX_REISSUES,
      maxAttempts: e.HARVEST_MEDIA_MAX_ATTEMPTS,
      marginMaxMs: e.HARVEST_MEDIA_MARGIN_MS,
      timeoutMs: e.HARVEST_MEDIA_TIMEOUT_MS,
      maxTransferMs: e.HARVEST_MEDIA_MAX_TRANSFER_MS,
      maxRedirects: e.HARVEST_MEDIA_MAX_REDIRECTS,
      urgentMs: e.HARVEST_MEDIA_URGENT_MS,
      allowHosts: Object.freeze(e.HARVEST_MEDIA_ALLOW_HOSTS),
    }),
    apiTimeoutMs: e.HARVEST_API_TIMEOUT_MS,
    stopGraceMs: e.HARVEST_STOP_GRACE_MS,
    creditsAnomalyFactor: e.HARVEST_CREDITS_ANOMALY_FACTOR,
    testKillAt: e.HARVEST_TEST_KILL_AT,
  });
}
