/**
 * Settings, parsed once from the environment into a frozen object that is passed down.
 * Nothing else in harvest reads `process.env`.
 */
import path from 'node:path';
import { z } from 'zod';

const EnvSchema = z.object({
  HARVEST_API_URL: z.url().default('https://api.firecrawl.dev'),
  HARVEST_API_KEY: z.string().optional(),
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  HARVEST_DATA_DIR: z.string().default('data'),
  HARVEST_DB: z.string().optional(),
  HARVEST_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, dot, dash and underscore only')
    .default('harvest'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
});

export interface Settings {
  /** Base address of the Web Data Service API, without the version segment. */
  readonly apiUrl: string;
  /** Bearer key for the API. Never logged, stored or exported. */
  readonly apiKey: string | undefined;
  /** Redis connection string for the queues. Default `redis://127.0.0.1:6379`. */
  readonly redisUrl: string;
  /** Folder for the database and saved media. Default `./data`. */
  readonly dataDir: string;
  /** SQLite database file. Default `<dataDir>/harvest.db`. */
  readonly dbPath: string;
  /** Redis key prefix of every queue, so several users or tests can share one Redis. */
  readonly queuePrefix: string;
  /** pino log level; when unset each command picks its own (`worker` info, others warn). */
  readonly logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
}

export class SettingsError extends Error {
  readonly code = 'SETTINGS_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const parsed = EnvSchema.safeParse(
    Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')),
  );
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new SettingsError(`invalid environment:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const dataDir = path.resolve(e.HARVEST_DATA_DIR);
  return Object.freeze({
    apiUrl: e.HARVEST_API_URL.replace(/\/+$/, ''),
    apiKey: e.HARVEST_API_KEY,
    redisUrl: e.REDIS_URL,
    dataDir,
    dbPath: path.resolve(e.HARVEST_DB ?? path.join(dataDir, 'harvest.db')),
    queuePrefix: e.HARVEST_PREFIX,
    logLevel: e.LOG_LEVEL,
  });
}
