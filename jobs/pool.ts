/**
 * A worker pool: the roles asked for (see ./roles), the pieces they share (API client,
 * group-commit sink, budget, in-flight journal, the database's writer), this pool's heartbeat
 * and the reaper of calls lost with dead workers, and a graceful close that loses nothing.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Queue } from 'bullmq';
import type { ApiClient } from '../src/api/index.ts';
import type { Logger } from '../src/log.ts';
import type { PoolMetrics } from '../src/metrics/pool.ts';
import { Budget } from '../src/queue/budget.ts';
import { createRedis } from '../src/queue/connection.ts';
import { InflightJournal } from '../src/queue/inflight.ts';
import { harvestKeys, QUEUES } from '../src/queue/names.ts';
import { RateController } from '../src/queue/rate/controller.ts';
import { StoppedRuns } from '../src/queue/stopped-runs.ts';
import type { FeederOptions } from '../src/run/feed/feeder.ts';
import { foreignRunWarner } from '../src/store/foreign-runs.ts';
import type { Store, StoreEvent } from '../src/store/index.ts';
import { type LostCallsWatch, watchLostCalls } from './lost-calls.ts';
import { type MediaRoleOptions, startMediaRole } from './media/role.ts';
import { databaseWriter, durable, writerOrStoreQueue } from './records.ts';
import type { RoleContext, RoleHandle } from './role.ts';
import type { Role } from './role-names.ts';
import { type RunsRoleOptions, startRunsRole } from './runs/role.ts';
import { SearchGate } from './search/gate.ts';
import { type SearchRoleOptions, startSearchRole } from './search/role.ts';
import { startStoreRole } from './store/role.ts';
import { StoreSink } from './store/sink.ts';

export { ROLES, type Role } from './role-names.ts';
export { pauseSearchQueue, SLOTS_PER_WORKER, splitConcurrency } from './search/role.ts';

export interface PoolOptions extends SearchRoleOptions {
  redisUrl: string;
  /** Redis key prefix of every queue. */
  prefix: string;
  roles: readonly Role[];
  /** Required for the `search` role. */
  client?: ApiClient;
  /** Required for the `store`, `runs` and `media` roles: the SQLite database this host owns. */
  store?: Store;
  /** Required for the `runs` role. */
  runs?: RunsRoleOptions;
  /**
   * How the store role feeds runs larger than the queue window from SQLite (src/run/feed/feeder.ts).
   * Default: it does not feed (tests of other parts; `startLocalPool` always passes it).
   */
  feeder?: FeederOptions;
  /** Counters only this pool knows (`harvest worker --metrics-port`). */
  metrics?: PoolMetrics;
  /** Required for the `media` role. */
  media?: MediaRoleOptions;
  logger: Logger;
  /** How often calls lost with dead workers are looked for, in ms. Default min(5000, lock duration). */
  reapIntervalMs?: number;
}

export interface Pool {
  readonly workerId: string;
  /** Finishes the calls in flight, makes their records durable, and closes every connection. */
  close(): Promise<void>;
  /**
   * Stops at once (a second Ctrl-C): calls in flight are recorded as LOST (their answers will
   * never be read) and the pool's connections are dropped. Jobs in hand return to the queue.
   */
  forceClose(why: string): Promise<void>;
}

type RoleStarter = (ctx: RoleContext, options: PoolOptions) => Promise<RoleHandle>;

const STARTERS: Record<Role, RoleStarter> = {
  search: startSearchRole,
  store: (ctx, options) => startStoreRole(ctx, options.feeder),
  runs: (ctx, options) => startRunsRole(ctx, options.runs),
  media: (ctx, options) => startMediaRole(ctx, options.media),
};

/**
 * Roles closed before this pool's records are drained: those that make records (media re-issues
 * are calls too). The store role goes last, as it takes the records of every other process.
 */
const PRODUCERS: readonly Role[] = ['search', 'media'];

export async function startPool(options: PoolOptions): Promise<Pool> {
  const { prefix, logger, roles } = options;
  const workerId = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const log = logger.child({ workerId });
  const connection = createRedis(options.redisUrl, 'worker');
  const redis = createRedis(options.redisUrl, 'client');
  const keys = harvestKeys(prefix);
  const searchQueue = new Queue(QUEUES.search, { connection, prefix });
  const storeQueue = new Queue(QUEUES.store, { connection, prefix });
  // Without listeners BullMQ prints every failed reconnection; Redis going away is said once
  // by the command (src/cli/redis-watch.ts), and each operation fails on its own.
  searchQueue.on('error', () => {});
  storeQueue.on('error', () => {});
  const has = (role: Role) => roles.includes(role);
  const writer = await databaseWriter(options.store, { store: has('store') }, log);
  const { store } = options;
  const warnOfForeignRuns =
    writer && store
      ? foreignRunWarner((runId) => store.runs.get(runId) !== undefined, store.path, log)
      : undefined;
  const sink = new StoreSink(writerOrStoreQueue(writer, storeQueue, redis, log, warnOfForeignRuns));
  const durableRecord = durable((events) => sink.push(events), log);
  const record = counted(durableRecord, options.metrics);
  // A worker is dead once it has been silent as long as its jobs' locks last.
  const inflight = new InflightJournal(
    redis,
    keys,
    Math.max(options.lockDurationMs ?? 30_000, 1000),
  );
  const budget = new Budget(redis, keys);
  const stoppedRuns = new StoppedRuns(redis, keys.stoppedRuns);
  const ctx: RoleContext = {
    workerId,
    prefix,
    connection,
    redis,
    keys,
    log,
    searchQueue,
    storeQueue,
    budget,
    inflight,
    stoppedRuns,
    record,
    searchGate: new SearchGate(),
    rate: new RateController(redis, keys, searchQueue, log),
  };
  if (options.client) ctx.client = options.client;
  if (options.store) ctx.store = options.store;
  if (writer) ctx.writer = writer;
  if (options.metrics) ctx.metrics = options.metrics;

  const handles = new Map<Role, RoleHandle>();
  let lost: LostCallsWatch | undefined;
  try {
    await stoppedRuns.watch();
    lost = await watchLostCalls({
      workerId,
      roles,
      inflight,
      budget,
      redis,
      keys,
      // Several pools may record the same lost call (the store keeps one): each counts in its
      // metrics only the calls it took off the journal.
      record: durableRecord,
      ...(options.metrics ? { counted: (events) => options.metrics?.recorded(events) } : {}),
      log,
      ...(options.reapIntervalMs === undefined ? {} : { reapIntervalMs: options.reapIntervalMs }),
    });
    // The roles that call the API last: none calls (and bills) before every role is up.
    const ordered = [...roles].sort(
      (a, b) => Number(PRODUCERS.includes(a)) - Number(PRODUCERS.includes(b)),
    );
    for (const role of ordered) handles.set(role, await STARTERS[role](ctx, options));
  } catch (error) {
    // A pool that did not start leaves nothing running: no role taking jobs, no timer, no
    // thread or connection keeping the process alive after it has said why it failed.
    for (const handle of [...handles.values()].reverse()) {
      await handle.close().catch(() => {});
    }
    await lost?.stop().catch(() => {});
    await closeConnections().catch(() => {});
    throw error;
  }
  const watch = lost;

  async function closeRoles(which: (role: Role) => boolean): Promise<void> {
    await Promise.all([...handles].filter(([role]) => which(role)).map(([, h]) => h.close()));
  }

  async function closeConnections(): Promise<void> {
    stoppedRuns.close();
    await writer?.close();
    await searchQueue.close();
    await storeQueue.close();
    await options.client?.close();
    await redis.quit().catch(() => {});
    await connection.quit().catch(() => {});
  }

  let closing: Promise<void> | undefined;
  return {
    workerId,
    close() {
      closing ??= (async () => {
        watch.stopReaping();
        // Producers first: calls in flight finish and push their records. The heartbeat goes
        // on until those records are durable: a call may take a minute, and a pool that saw
        // this worker fall silent would record its calls as lost meanwhile.
        await closeRoles((role) => PRODUCERS.includes(role));
        await sink.drain();
        await watch.stop();
        await closeRoles((role) => !PRODUCERS.includes(role));
        await closeConnections();
      })();
      return closing;
    },
    async forceClose(why) {
      watch.stopReaping();
      const abandoned = await watch.abandonOwnCalls(why).catch((error: unknown) => {
        log.error({ err: error }, 'could not record the calls in flight as lost');
        return 0;
      });
      if (abandoned > 0) log.warn({ lost: abandoned }, 'calls in flight recorded as lost');
      // A forced stop ends the process: records that cannot be made durable now (Redis away,
      // no writer here) are not waited for. Their calls stay journaled, and another pool
      // records them as lost.
      await within(FORCED_WAIT_MS, sink.drain(), () =>
        log.warn('records not yet durable are left to the journal'),
      );
      await within(FORCED_WAIT_MS, watch.stop());
      stoppedRuns.close();
      await within(FORCED_WAIT_MS, writer?.close() ?? Promise.resolve());
      redis.disconnect();
      connection.disconnect();
    },
  };
}

/** Longest wait of a forced stop for each of its steps, in ms. */
const FORCED_WAIT_MS = 3000;

/** Waits for `work` at most `ms`; `late` is told when it gave up waiting. */
async function within(ms: number, work: Promise<unknown>, late?: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
    timer.unref();
  });
  const outcome = await Promise.race([
    work.then(
      () => 'done' as const,
      () => 'done' as const,
    ),
    timeout,
  ]);
  clearTimeout(timer);
  if (outcome === 'late') late?.();
}

/** `record`, telling the metrics what it made durable. */
function counted(
  record: (events: StoreEvent[]) => Promise<void>,
  metrics: PoolMetrics | undefined,
): (events: StoreEvent[]) => Promise<void> {
  if (!metrics) return record;
  return async (events) => {
    await record(events);
    metrics.recorded(events);
  };
}
