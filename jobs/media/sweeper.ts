/**
 * The sweeper of partial files: a download writes to a partial file named after its worker
 * (src/media/storage.ts), and one whose worker died leaves it behind. The media role sweeps when
 * it starts and again every `intervalMs` while it runs: a worker restarted at once after a crash
 * still finds the dead one's heartbeat alive, and the dead one's partial files (up to `maxBytes`
 * each) would otherwise stay until the next start.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../../src/log.ts';
import { mediaRoot, removeOrphanPartials } from '../../src/media/storage.ts';
import type { HarvestKeys } from '../../src/queue/names.ts';

/** Partial files untouched this long are removed whoever wrote them, in ms (1 hour). */
const PARTIAL_MAX_IDLE_MS = 3_600_000;
/** How often partial files of dead workers are looked for while the role runs, in ms. */
const PARTIAL_SWEEP_MS = 60_000;

export interface PartialSweeperOptions {
  /** The media folders of every run that saves media, relative to `dataDir`. */
  dirs(): string[];
  /** The data directory: media folders are inside it. */
  dataDir: string;
  /** Whether the worker named `owner` still runs (its partial files are in use). */
  alive(owner: string): Promise<boolean>;
  /** How often to sweep while running, in ms. Default PARTIAL_SWEEP_MS. */
  intervalMs?: number;
  log: Logger;
}

/** A worker is alive while its heartbeat lasts (jobs/lost-calls.ts); this worker always is. */
export function workerAlive(
  redis: Redis,
  keys: HarvestKeys,
  workerId: string,
): (owner: string) => Promise<boolean> {
  return async (owner) =>
    owner === workerId || (await redis.exists(keys.workerHeartbeat(owner))) === 1;
}

/** Sweeps once now, then every `intervalMs` (one sweep at a time) until stopped. */
export async function startPartialSweeper(
  options: PartialSweeperOptions,
): Promise<{ stop(): Promise<void> }> {
  const { log } = options;
  const sweep = async () => {
    for (const dir of options.dirs()) {
      const removed = await removeOrphanPartials(
        mediaRoot(options.dataDir, dir),
        options.alive,
        PARTIAL_MAX_IDLE_MS,
        Date.now(),
      );
      if (removed > 0) log.info({ dir, removed }, 'removed partial files of interrupted downloads');
    }
  };
  await sweep();
  let sweeping: Promise<void> | undefined;
  const timer = setInterval(() => {
    sweeping ??= sweep()
      .catch((error: unknown) => log.warn({ err: error }, 'removing partial files failed'))
      .finally(() => {
        sweeping = undefined;
      });
  }, options.intervalMs ?? PARTIAL_SWEEP_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}
