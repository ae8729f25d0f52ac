/**
 * The sweeper of partial files (jobs/media/sweeper.ts) on a real temp folder, with workers'
 * heartbeats in Redis under a fresh prefix.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startPartialSweeper, workerAlive } from '../../../../jobs/media/sweeper.ts';
import { closePartial, mediaRoot, openPartialFile } from '../../../../src/media/storage.ts';
import { harvestKeys } from '../../../../src/queue/names.ts';
import { useCleanup } from '../../../helpers/cleanup.ts';
import { capturedLogger } from '../../../helpers/logger.ts';
import { testRedis } from '../../../helpers/redis.ts';
import { tempDir } from '../../../helpers/tmp.ts';
import { waitFor } from '../../../helpers/wait.ts';

const defer = useCleanup();

describe('startPartialSweeper', () => {
  it("removes dead workers' partial files at start and while it runs, never a live one's", async () => {
    const { prefix, redis } = testRedis(defer);
    const keys = harvestKeys(prefix);
    const data = tempDir('sweeper');
    defer(() => data.remove());
    const root = mediaRoot(data.dir, 'media');
    const partial = async (owner: string) => {
      const file = await openPartialFile(root, owner);
      closePartial(file);
      return file.path;
    };
    await redis.set(keys.workerHeartbeat('live'), '1');
    const own = await partial('self');
    const live = await partial('live');
    const dead = await partial('dead');

    const { logger, lines } = capturedLogger();
    const sweeper = await startPartialSweeper({
      dirs: () => ['media'],
      dataDir: data.dir,
      alive: workerAlive(redis, keys, 'self'),
      intervalMs: 50,
      log: logger,
    });
    defer(() => sweeper.stop());
    expect([existsSync(own), existsSync(live), existsSync(dead)]).toEqual([true, true, false]);
    expect(lines).toContainEqual(
      expect.objectContaining({ dir: 'media', removed: 1, msg: expect.stringMatching(/partial/) }),
    );

    // The live worker dies: its file goes at the next sweep.
    await redis.del(keys.workerHeartbeat('live'));
    await waitFor(
      'the sweep while running to remove the file of the worker that died',
      () => !existsSync(live),
    );
    expect(existsSync(own)).toBe(true);
  });
});
