/**
 * The dashboard while its Redis (a redis-server of this test's own) is away.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { startDashboard } from '../../src/dashboard/server.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { freshPrefix } from '../helpers/redis.ts';

const defer = useCleanup();

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

describe('dashboard during a Redis outage', () => {
  it('keeps answering, and prints no stack trace per reconnection', async () => {
    const port = await freePort();
    const redis: ChildProcess = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    defer(() => redis.kill('SIGKILL'));
    await sleep(1500);
    const board = await startDashboard({
      redisUrl: `redis://127.0.0.1:${port}`,
      prefix: freshPrefix(),
      port: 0,
    });
    defer(() => board.close());
    expect((await fetch(`${board.url}api/queues`)).status).toBe(200);
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    defer(() => errors.mockRestore());
    redis.kill('SIGKILL');
    await sleep(300);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      statuses.push(
        await fetch(`${board.url}api/queues`, { signal: AbortSignal.timeout(5000) })
          .then((r) => r.status)
          .catch(() => 0),
      );
      await sleep(500);
    }
    expect(statuses.every((s) => s > 0)).toBe(true);
    expect(errors.mock.calls.length).toBe(0);
  }, 60_000);
});
