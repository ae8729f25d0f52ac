/**
 * REDIS_URL may carry its password as a query parameter (`?password=`), which ioredis logs in
 * with: it is masked and scrubbed like a password before the `@` (README: nothing printed holds
 * a secret).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { maskUrl, secretsOf } from '../../src/config.ts';
import { freePort } from '../helpers/ports.ts';
import { tempDir } from '../helpers/tmp.ts';

const PASSWORD = 'hunter2hunter2';
const BIN = path.resolve('bin/harvest.js');

function run(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => {
    out += String(c);
  });
  child.stderr.on('data', (c) => {
    err += String(c);
  });
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, out, err })),
  );
}

describe('a REDIS_URL password given as ?password=', () => {
  it('is the password ioredis authenticates with', () => {
    const redis = new Redis(`redis://127.0.0.1:1/?password=${PASSWORD}`, { lazyConnect: true });
    expect(redis.options.password).toBe(PASSWORD);
    redis.disconnect();
  });

  it('is masked and scrubbed like a password in the userinfo', () => {
    const url = `redis://127.0.0.1:6379/?password=${PASSWORD}`;
    expect(maskUrl(url)).not.toContain(PASSWORD);
    expect(secretsOf({ REDIS_URL: url })).toContain(PASSWORD);
  });

  it('never shows in what a command prints when Redis is not reachable', async () => {
    const port = await freePort();
    const tmp = tempDir('harvest-redis-password');
    try {
      const res = await run(['schedule', 'ls', '--json'], {
        REDIS_URL: `redis://127.0.0.1:${port}/?password=${PASSWORD}`,
        HARVEST_DATA_DIR: tmp.dir,
        HARVEST_PREFIX: `test-${randomUUID()}`,
      });
      expect(res.code).toBe(3);
      expect(res.err).toContain('Redis is not reachable');
      expect(`${res.out}\n${res.err}`).not.toContain(PASSWORD);
    } finally {
      tmp.remove();
    }
  });
});
