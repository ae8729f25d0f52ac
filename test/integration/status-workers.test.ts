/**
 * `harvest status RUN` says when no live worker would take an unfinished run's tasks: a run
 * enqueued with no pool otherwise reads as `queued 0/N` with no reason. Real Redis (worker
 * heartbeats), the sandbox on port 0, a temp SQLite file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import type { Pool } from '../../jobs/pool.ts';
import { startRun } from '../../src/run/start.ts';
import { runCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';

let h: Harness | undefined;
const pools: Pool[] = [];

afterEach(async () => {
  for (const p of pools.splice(0)) await p.close();
  await h?.stop();
  h = undefined;
}, 60_000);

const PIPELINE =
  'name: idle\nsearches:\n  - query: "idle one"\n    limit: 2\n  - query: "idle two"\n    limit: 2\n';

describe('harvest status RUN and live workers', () => {
  it('names the missing roles while tasks wait, and says nothing once workers run', async () => {
    // Searches take long enough for the run to be unfinished while a search worker holds them
    // (closing the pool waits for them).
    h = await startHarness({ sandbox: { latency: { minMs: 10_000, maxMs: 10_000 } } });
    const { runId } = await startRun(h.runtime, h.writePipeline('idle', PIPELINE), {
      logger: h.logger,
    });

    const none = await runCli(['status', runId], h.settings);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain(
      '  workers  none live with the search or the store role: its tasks wait; start `harvest worker` on the database host',
    );
    const json = JSON.parse((await runCli(['status', runId, '--json'], h.settings)).stdout);
    expect(json.workers).toEqual({ search: 0, store: 0 });

    pools.push(
      await startLocalPool(h.settings, {
        roles: ['search'],
        concurrency: 2,
        store: h.runtime.store,
        logger: h.logger,
      }),
    );
    const searchOnly = await runCli(['status', runId], h.settings);
    expect(searchOnly.stdout).toContain(
      '  workers  none live with the store role: its tasks wait; start `harvest worker` on the database host',
    );

    pools.push(
      await startLocalPool(h.settings, {
        roles: ['store'],
        concurrency: 1,
        store: h.runtime.store,
        logger: h.logger,
      }),
    );
    const both = await runCli(['status', runId], h.settings);
    expect(both.stdout).not.toContain('  workers  ');
    const bothJson = JSON.parse((await runCli(['status', runId, '--json'], h.settings)).stdout);
    expect(bothJson.workers).toEqual({ search: 1, store: 1 });
  }, 60_000);
});
