/**
 * A run started against another database than the worker's (`harvest run` and the worker with
 * different HARVEST_DB on one prefix): its records are kept in the worker's database, and the
 * worker says so once per run, whether its own searches commit them (a pool with the search and
 * store roles, the default worker) or its store role commits those of other hosts.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import type { Pool } from '../../jobs/pool.ts';
import type { Role } from '../../jobs/role-names.ts';
import { openRuntime, type Runtime } from '../../src/run/runtime.ts';
import { startRun } from '../../src/run/start.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { capturedLogger } from '../helpers/logger.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
let other: Runtime | undefined;
const pools: Pool[] = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.close();
  await other?.close();
  other = undefined;
  await h?.stop();
  h = undefined;
});

const PIPELINE =
  'name: elsewhere\nsearches:\n  - query: "kept elsewhere {n}"\n    matrix:\n      n: [1, 2, 3]\n    limit: 1\n';

describe('a run its worker’s database lacks', () => {
  const layouts: Array<{ name: string; pools: Role[][] }> = [
    { name: 'searched by a pool with the search and store roles', pools: [['search', 'store']] },
    { name: 'searched elsewhere, committed by the store role', pools: [['store'], ['search']] },
  ];
  for (const layout of layouts) {
    it(`${layout.name}: kept, and said once`, async () => {
      h = await startHarness();
      // `harvest run` against another database on the same prefix.
      other = await openRuntime({ ...h.settings, dbPath: path.join(h.dir, 'other', 'harvest.db') });
      const file = h.writePipeline('elsewhere', PIPELINE);
      const { runId } = await startRun(other, file, { logger: h.logger });
      const { logger, lines } = capturedLogger();
      for (const roles of layout.pools) {
        pools.push(
          await startLocalPool(h.settings, {
            roles,
            concurrency: 4,
            ...(roles.includes('store') ? { store: h.runtime.store } : {}),
            logger,
          }),
        );
      }
      const ok = () => h!.runtime.store.calls.summary(runId).byOutcome.ok;
      await waitFor('3 ok calls recorded', ok, { until: (n) => n === 3, intervalMs: 50 });
      expect(h.runtime.store.calls.summary(runId).byOutcome.ok).toBe(3);
      const warnings = lines.filter((l) =>
        String(l.msg).includes("is not in this worker's database"),
      );
      expect(warnings.map((l) => l.runId)).toEqual([runId]);
    }, 60_000);
  }
});
