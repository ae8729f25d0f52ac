/**
 * An end-to-end harness on real parts: the sandbox on port 0, a fresh Redis prefix, a temp
 * SQLite file, and the worker pool in this process. Everything it starts, `stop()` undoes.
 */

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { Settings } from '../../src/config.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import type { Pool } from '../../src/queue/pool.ts';
import { startLocalPool } from '../../src/run/local.ts';
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
  startPool(options?: { concurrency?: number; apiKey?: string }): Promise<Pool>;
  stop(): Promise<void>;
}

export async function startHarness(
  options: { sandbox?: SandboxOptions; apiKey?: string } = {},
): Promise<Harness> {
  const tmp = tempDir('harvest-it');
  const prefix = freshPrefix();
  const sandbox = await startSandbox({ port: 0, ...options.sandbox });
  const settings = testSettings({
    dir: tmp.dir,
    prefix,
    apiUrl: sandbox.url,
    apiKey: options.apiKey,
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
      const s = poolOptions.apiKey ? { ...settings, apiKey: poolOptions.apiKey } : settings;
      const pool = await startLocalPool(s, {
        roles: ['search', 'store'],
        concurrency: poolOptions.concurrency ?? 8,
        store: runtime.store,
        logger,
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
