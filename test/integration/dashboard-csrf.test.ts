/**
 * A dashboard with basic auth and --allow-actions, and a request another site's page can
 * make without a preflight (a form POST, text/plain), carrying the credentials the browser
 * cached for the dashboard.
 */
import { describe, expect, it } from 'vitest';
import { startDashboard } from '../../src/dashboard/server.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { searchQueueWithJobs } from '../helpers/queues.ts';
import { REDIS_URL } from '../helpers/redis.ts';

const defer = useCleanup();

describe('dashboard with basic auth and actions', () => {
  it('refuses a cross-site form POST that adds a job', async () => {
    const { prefix, search } = await searchQueueWithJobs(defer);
    const board = await startDashboard({
      redisUrl: REDIS_URL,
      prefix,
      port: 0,
      host: '127.0.0.1',
      allowActions: true,
      auth: { user: 'ops', password: 'correct horse' },
    });
    defer(() => board.close());
    const before = await search.count();
    const res = await fetch(`${board.url}api/queues/${QUEUES.search}/add`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('ops:correct horse').toString('base64')}`,
        origin: 'https://evil.example',
        'content-type': 'text/plain',
      },
      body: '{"name":"x"}=',
    });
    const after = await search.count();
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(after - before).toBe(0);
  });
});
