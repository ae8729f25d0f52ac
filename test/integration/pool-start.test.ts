/**
 * A pool that cannot start (the database locked by another process past its busy timeout)
 * leaves nothing running: no role takes jobs or calls the API, no heartbeat says it is alive.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterEach, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import { liveWorkersWithRole } from '../../src/queue/inflight.ts';
import { startRun } from '../../src/run/start.ts';
import { openStore } from '../../src/store/index.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

it('a pool that fails to start stops what it started, and calls nothing', async () => {
  h = await startHarness();
  const store = openStore(h.settings.dbPath, { busyTimeoutMs: 100 });
  const other = new Database(h.settings.dbPath);
  other.exec('BEGIN IMMEDIATE');
  try {
    await expect(
      startLocalPool(h.settings, {
        roles: ['search', 'store', 'media'],
        concurrency: 4,
        store,
        logger: h.logger,
      }),
    ).rejects.toThrow(/locked|busy/i);
  } finally {
    other.exec('COMMIT');
    other.close();
  }
  expect(await liveWorkersWithRole(h.runtime.redis, h.runtime.keys, 'store')).toBe(0);
  const file = h.writePipeline(
    'idle',
    'name: idle\nsearches:\n  - query: "nobody works {n}"\n    matrix:\n      n: [1, 2, 3]\n',
  );
  await startRun(h.runtime, file, { logger: h.logger });
  // A fixed duration: the test is about no call being made over a while.
  await sleep(1500);
  expect(h.sandbox.ledger().teams.sandbox?.calls ?? {}).toEqual({});
  store.close();
});
