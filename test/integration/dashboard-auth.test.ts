/**
 * The dashboard's password beyond loopback: wrong guesses are slowed per client address (a
 * lockout that grows), and the command refuses a short password. Clients are on loopback
 * addresses: 127.0.0.1 and 127.0.0.2 stand for two machines.
 */
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { type RunningDashboard, startDashboard } from '../../src/dashboard/server.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { REDIS_URL, testRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const defer = useCleanup();
const PASSWORD = 'correct horse battery staple';

async function dashboard(
  options: Partial<Parameters<typeof startDashboard>[0]> = {},
): Promise<RunningDashboard> {
  const { prefix } = testRedis(defer);
  const running = await startDashboard({
    redisUrl: REDIS_URL,
    prefix,
    port: 0,
    host: '0.0.0.0',
    auth: { user: 'ops', password: PASSWORD },
    ...options,
  });
  defer(() => running.close());
  return running;
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

/** GET / with `password`, from the loopback address `from`. */
function get(port: number, password: string, from = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        localAddress: from,
        headers: { authorization: `Basic ${Buffer.from(`ops:${password}`).toString('base64')}` },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += String(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'] as string | undefined,
            body,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('dashboard basic auth against guessing', () => {
  it('locks an address out after its free failures, longer each time; others are not held back', async () => {
    const board = await dashboard({ throttle: { freeFailures: 3, firstDelayMs: 1500 } });
    const port = Number(new URL(board.url).port);
    for (let i = 0; i < 4; i++) expect((await get(port, `guess-${i}`)).status).toBe(401);
    // Locked out: even the right password is not checked.
    const locked = await get(port, PASSWORD);
    expect(locked.status).toBe(429);
    expect(locked.retryAfter).toBe('2');
    expect(locked.body).toContain('too many wrong passwords from this address');
    // Another machine is not held back by this one's guesses.
    expect((await get(port, PASSWORD, '127.0.0.2')).status).toBe(200);

    // Time passing is the point: the lockout ends by itself, and guesses sent meanwhile were
    // not checked. The first one checked is wrong again: the next lockout is twice as long.
    const startedAt = Date.now();
    await waitFor('the lockout to end', () => get(port, 'guess-after'), {
      until: (a) => a.status === 401,
      intervalMs: 100,
    });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1000);
    expect((await get(port, PASSWORD)).retryAfter).toBe('3');
  });

  it('answers 200 guesses at once with lockouts, checking only the first few', async () => {
    const board = await dashboard();
    const port = Number(new URL(board.url).port);
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => get(port, `burst-${i}`)),
    );
    const wrong = answers.filter((a) => a.status === 401).length;
    const refused = answers.filter((a) => a.status === 429).length;
    expect(wrong + refused).toBe(200);
    // The default: five free failures, then locked out for a second.
    expect(wrong).toBeLessThanOrEqual(6);
    expect((await get(port, PASSWORD)).status).toBe(429);
  });
});

describe('harvest dashboard beyond loopback, the command', () => {
  const run = promisify(execFile);

  it('refuses a password shorter than 16 characters, in one line, exit 2', async () => {
    const out = await run('node', ['bin/harvest.js', 'dashboard', '--host', '0.0.0.0'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        REDIS_URL,
        HARVEST_DASHBOARD_USER: 'ops',
        HARVEST_DASHBOARD_PASSWORD: 'x',
      },
      // only a dashboard that wrongly started runs this long; a loaded machine needs slack
      timeout: 45_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      'harvest: refusing to serve the dashboard on 0.0.0.0 with a short password: HARVEST_DASHBOARD_PASSWORD needs 16 characters at least beyond loopback (a random one: `openssl rand -hex 16`)\n',
    );
  }, 60_000);
});
