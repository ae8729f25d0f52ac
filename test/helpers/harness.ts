/**
 * An end-to-end harness on real parts: the sandbox on port 0, a fresh Redis prefix, a temp
 * SQLite file, and the worker pool in this process. Everything it starts, `stop()` undoes.
 */

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { type LocalPoolOptions, startLocalPool } from '../../jobs/local.ts';
import type { Pool, Role } from '../../jobs/pool.ts';
import type { Settings } from '../../src/config.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import { openRuntime, type Runtime } from '../../src/run/runtime.ts';
import { type SandboxOptions, startSandbox } from '../../src/sandbox/index.ts';
import { deletePrefix, freshPrefix } from './redis.ts';
import { testSettings } from './settings.ts';
import { tempDir } from './tmp.ts';

type Sandbox = Awaited<ReturnType<typeof startSandbox>>;

export interface Harness {
  settings: Settings;
  sandbox: Sandbox;
  runtime: Runtime;
  logger: Logger;
  /** Everything the logger wrote. */
  logs(): string;
  dir: string;
  writePipeline(name: string, yaml: string): string;
  startPool(options?: PoolChoice): Promise<Pool>;
  stop(): Promise<void>;
}

/** The environment of a `harvest` process working on this harness's Redis, API and data. */
export function harvestEnv(harness: Harness): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HARVEST_API_URL: harness.settings.apiUrl,
    HARVEST_API_KEY: harness.settings.apiKey,
    HARVEST_PREFIX: harness.settings.queuePrefix,
    REDIS_URL: harness.settings.redisUrl,
    HARVEST_DATA_DIR: harness.dir,
    HARVEST_DB: harness.settings.dbPath,
    LOG_LEVEL: 'silent',
  };
}

export interface PoolChoice {
  concurrency?: number;
  apiKey?: string;
  /** Default search and store. */
  roles?: Role[];
  /** Settings of the pool beyond the harness's (the webhook secret, say). */
  settings?: Partial<Settings>;
  runs?: LocalPoolOptions['runs'];
  metrics?: LocalPoolOptions['metrics'];
  /** Media role knobs (a resolver for made-up host names, a faster poll). */
  media?: LocalPoolOptions['media'];
}

export async function startHarness(
  options: { sandbox?: SandboxOptions; apiKey?: string; env?: Record<string, string> } = {},
): Promise<Harness> {
  const tmp = tempDir('harvest-it');
  const prefix = freshPrefix();
  const sandbox = await startSandbox({ port: 0, ...options.sandbox });
  const settings = testSettings({
    dir: tmp.dir,
    prefix,
    apiUrl: sandbox.url,
    apiKey: options.apiKey,
    ...(options.env ? { env: options.env } : {}),
  });
  let logText = '';
  const sinkStream = new Writable({
    write(chunk, _enc, done) {
      logText += String(chunk);
      done();
    },
  });
  const logger = createLogger({ level: 'debug', destination: sinkStream });
  const runtime = await openRuntime(settings);
  const pools: Pool[] = [];
  return {
    settings,
    sandbox,
    runtime,
    logger,
    logs: () => logText,
    dir: tmp.dir,
    writePipeline(name, yaml) {
      const file = path.join(tmp.dir, `${name}.yaml`);
      writeFileSync(file, yaml);
      return file;
    },
    async startPool(poolOptions = {}) {
      const s = {
        ...settings,
        ...poolOptions.settings,
        ...(poolOptions.apiKey ? { apiKey: poolOptions.apiKey } : {}),
      };
      const pool = await startLocalPool(s, {
        roles: poolOptions.roles ?? ['search', 'store'],
        concurrency: poolOptions.concurrency ?? 8,
        store: runtime.store,
        logger,
        runs: poolOptions.runs,
        metrics: poolOptions.metrics,
        media: { pollMs: 50, ...poolOptions.media },
      });
      pools.push(pool);
      return pool;
    },
    async stop() {
      for (const p of pools) await p.close();
      await runtime.close();
      await sandbox.close();
      await deletePrefix(prefix);
      tmp.remove();
    },
  };
}
