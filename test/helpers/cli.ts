/** Runs the `harvest` binary in a child process against a test harness's settings. */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { Settings } from '../../src/config.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.ts';
import { deletePrefix, freshPrefix } from './redis.ts';
import { testSettings } from './settings.ts';
import { tempDir } from './tmp.ts';

export const BIN = path.resolve('bin/harvest.js');

export interface CliProcess {
  child: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal) once the process has ended. */
  exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
}

/** The environment that points a child at the test's API, Redis prefix and database. */
export function cliEnv(settings: Settings, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HARVEST_API_URL: settings.apiUrl,
    HARVEST_API_KEY: settings.apiKey,
    HARVEST_PREFIX: settings.queuePrefix,
    REDIS_URL: settings.redisUrl,
    HARVEST_DATA_DIR: settings.dataDir,
    HARVEST_DB: settings.dbPath,
    LOG_LEVEL: 'silent',
    ...extra,
  };
}

export function spawnCli(
  args: readonly string[],
  settings: Settings,
  extra: NodeJS.ProcessEnv = {},
): CliProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: cliEnv(settings, extra),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk) => {
    out += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    err += String(chunk);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return { child, exited, stdout: () => out, stderr: () => err };
}

/** Runs a command to its end. */
export async function runCli(
  args: readonly string[],
  settings: Settings,
  extra: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnCli(args, settings, extra);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** What the CLI tests of one file share: a sandbox, a temp folder and settings on both. */
export interface CliFixture {
  /** A fresh prefix, the sandbox's address, a database in `dir`. */
  settings: Settings;
  sandbox: RunningSandbox;
  dir: string;
  /** Writes `text` to `name` in `dir`; its path. */
  file(name: string, text: string): string;
}

/**
 * Starts the fixture before the file's tests and removes it (sandbox, Redis keys, folder)
 * after them. Its fields are set once `beforeAll` has run.
 */
export function useCliFixture(label: string): CliFixture {
  const tmp = tempDir(label);
  const fixture = {
    dir: tmp.dir,
    file(name: string, text: string) {
      const p = path.join(tmp.dir, name);
      writeFileSync(p, text);
      return p;
    },
  } as CliFixture;
  beforeAll(async () => {
    fixture.sandbox = await startSandbox({ port: 0 });
    fixture.settings = testSettings({
      dir: tmp.dir,
      prefix: freshPrefix(),
      apiUrl: fixture.sandbox.url,
    });
  });
  afterAll(async () => {
    await fixture.sandbox?.close();
    if (fixture.settings) await deletePrefix(fixture.settings.queuePrefix);
    tmp.remove();
  });
  return fixture;
}
