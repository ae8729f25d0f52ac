/**
 * The dashboard while its Redis (a redis-server of this test's own) is away.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { startDashboard } from '../../src/dashboard/server.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { OwnRedis } from '../helpers/own-redis.ts';
import { freshPrefix } from '../helpers/redis.ts';

const defer = useCleanup();

describe('dashboard during a Redis outage', () => {
  it('keeps answering, and prints no stack trace per reconnection', async () => {
    const redis = await OwnRedis.start();
    defer(() => redis.kill());
    const board = await startDashboard({
      redisUrl: redis.url(),
      prefix: freshPrefix(),
      port: 0,
    });
    defer(() => board.close());
    expect((await fetch(`${board.url}api/queues`)).status).toBe(200);
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    defer(() => errors.mockRestore());
    await redis.kill();
    // Fixed durations: the test is about the dashboard answering over 2 s of an outage.
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
