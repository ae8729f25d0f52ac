/**
 * A worker pool: the roles asked for (each wires its queue's processor, jobs/<queue>/role.ts),
 * the pieces they share (jobs/role.ts `RoleContext`: connections, API client, budget, in-flight
 * journal, the database's writer, where a record goes), this pool's heartbeat and the reaper of
 * calls lost with dead workers (./lost-calls.ts), and a graceful close that loses nothing.
 *
 * Over 300 lines: the start and the two closes (graceful, forced) undo each other step by step,
 * and are read side by side.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ApiClient } from '../src/api/index.ts';
import type { Logger } from '../src/log.ts';
import type { PoolMetrics } from '../src/metrics/pool.ts';
import { Budget } from '../src/queue/budget.ts';
import { createRedis } from '../src/queue/connection.ts';
import { InflightJournal } from '../src/queue/inflight.ts';
import { type HarvestKeys, harvestKeys, QUEUES } from '../src/queue/names.ts';
import { RateController } from '../src/queue/rate/controller.ts';
import { StoppedRuns } from '../src/queue/stopped-runs.ts';
import type { FeederOptions } from '../src/run/feed/feeder.ts';
import { foreignRunWarner } from '../src/store/foreign-runs.ts';
import type { EventWriter, Store, StoreEvent } from '../src/store/index.ts';
import { LateAnswers, type LostCallsWatch, watchLostCalls } from './lost-calls.ts';
import { type MediaRoleOptions, startMediaRole } from './media/role.ts';
import { databaseWriter, durable, type RecordSink, recordSink } from './records.ts';
import type { RoleContext, RoleHandle } from './role.ts';
import type { Role } from './role-names.ts';
import { type RunsRoleOptions, startRunsRole } from './runs/role.ts';
import { SearchGate } from './search/gate.ts';
import { type SearchRoleOptions, startSearchRole } from './search/role.ts';
import { startStoreRole } from './store/role.ts';

export { ROLES, type Role } from './role-names.ts';
export { pauseSearchQueue, SLOTS_PER_WORKER, splitConcurrency } from './search/role.ts';

export interface PoolOptions extends SearchRoleOptions {
  redisUrl: string;
  /** Redis key prefix of every queue. */
  prefix: string;
  roles: readonly Role[];
  /** Required for the `search` role. */
  client?: ApiClient;
  /**
   * The id of the client's API key (`apiKeyId`): the rate limit learned from its 429s is this
   * key's, shared with every pool on the key and no other. Default `none`.
   */
  apiKeyId?: string;
  /** Longest hold of the key's calls by its rate limit, in ms (`HARVEST_MAX_RATE_HOLD_MS`). */
  maxRateHoldMs?: number;
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
   * Stops at once (a second Ctrl-C): no job is taken any more, calls in flight are recorded as
   * LOST (an answer that arrives while it stops is recorded instead) and the pool's connections
   * are dropped. Jobs in hand return to the queue once their locks lapse.
   */
  forceClose(why: string): Promise<void>;
  /**
   * Redis lost its data (a restart without saving, its keys deleted): the call records this
   * pool sent through the store queue lately are sent again, so that no call the service
   * received is left without a row (./records.ts `QueuedCalls`). Never throws.
   */
  redisLostData(): Promise<void>;
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

/** The Redis connections and queues a pool's roles share. */
interface Links {
  /** Blocking connection of BullMQ workers and queues. */
  connection: Redis;
  /** Client connection for harvest's own keys. */
  redis: Redis;
  keys: HarvestKeys;
  searchQueue: Queue;
  storeQueue: Queue;
}

/** What a pool holds from its start to its close. */
interface Running {
  /** What the roles share; the pool closes its connections, writer and client. */
  ctx: RoleContext;
  /** This pool's own records, on their way to the database's writer or the store queue. */
  sink: RecordSink;
  /** The roles started, in the order they started. */
  handles: Map<Role, RoleHandle>;
  /** Answers recorded while a forced stop runs: their calls are not lost. */
  lateAnswers: LateAnswers;
}

export async function startPool(options: PoolOptions): Promise<Pool> {
  const workerId = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const log = options.logger.child({ workerId });
  const links = openLinks(options.redisUrl, options.prefix);
  const writer = await databaseWriter(
    options.store,
    { store: options.roles.includes('store') },
    log,
  );
  const sink = ownRecordsWrite(writer, links, options, log);
  const durableRecord = durable((events) => sink.push(events), log);
  const lateAnswers = new LateAnswers();
  const ctx = roleContext(options, {
    workerId,
    log,
    links,
    writer,
    record: counted(lateAnswers.noting(durableRecord), options.metrics),
  });
  const running: Running = { ctx, sink, handles: new Map(), lateAnswers };
  let lost: LostCallsWatch | undefined;
  try {
    await ctx.stoppedRuns.watch();
    lost = await watchLostCallsOf(ctx, options, durableRecord);
    await startRoles(ctx, options, running.handles);
  } catch (error) {
    // A pool that did not start leaves nothing running: no role taking jobs, no timer, no
    // thread or connection keeping the process alive after it has said why it failed.
    for (const handle of [...running.handles.values()].reverse()) {
      await handle.close().catch(() => {});
    }
    await lost?.stop().catch(() => {});
    await closeConnections(running).catch(() => {});
    throw error;
  }
  return poolOf(workerId, running, lost);
}

function openLinks(redisUrl: string, prefix: string): Links {
  const connection = createRedis(redisUrl, 'worker');
  const redis = createRedis(redisUrl, 'client');
  const searchQueue = new Queue(QUEUES.search, { connection, prefix });
  const storeQueue = new Queue(QUEUES.store, { connection, prefix });
  // Without listeners BullMQ prints every failed reconnection; Redis going away is said once
  // by the command (src/cli/redis-watch.ts), and each operation fails on its own.
  searchQueue.on('error', () => {});
  storeQueue.on('error', () => {});
  return { connection, redis, keys: harvestKeys(prefix), searchQueue, storeQueue };
}

/**
 * Where this pool's own records go (./records.ts), saying once per run the database lacks when
 * they go to this pool's writer, as the store role does for other processes' records.
 */
function ownRecordsWrite(
  writer: EventWriter | undefined,
  links: Links,
  options: PoolOptions,
  log: Logger,
): RecordSink {
  const { store } = options;
  const warnOfForeignRuns =
    writer && store
      ? foreignRunWarner((runId) => store.runs.get(runId) !== undefined, store.path, log)
      : undefined;
  return recordSink(writer, links.storeQueue, links.redis, log, warnOfForeignRuns);
}

/** This pool's heartbeat and the reaper of calls lost with dead workers (./lost-calls.ts). */
function watchLostCallsOf(
  ctx: RoleContext,
  options: PoolOptions,
  record: RoleContext['record'],
): Promise<LostCallsWatch> {
  const { metrics } = options;
  return watchLostCalls({
    workerId: ctx.workerId,
    roles: options.roles,
    inflight: ctx.inflight,
    budget: ctx.budget,
    redis: ctx.redis,
    keys: ctx.keys,
    // Several pools may record the same lost call (the store keeps one): each counts in its
    // metrics only the calls it took off the journal, so `record` here is not counted.
    record,
    ...(metrics ? { counted: (events) => metrics.recorded(events) } : {}),
    log: ctx.log,
    ...(options.reapIntervalMs === undefined ? {} : { reapIntervalMs: options.reapIntervalMs }),
  });
}

/** The pieces the pool shares with its roles (jobs/role.ts). */
function roleContext(
  options: PoolOptions,
  made: {
    workerId: string;
    log: Logger;
    links: Links;
    writer: EventWriter | undefined;
    record: RoleContext['record'];
  },
): RoleContext {
  const { redis, keys, searchQueue } = made.links;
  const searchGate = new SearchGate();
  const keyId = options.apiKeyId ?? 'none';
  const ctx: RoleContext = {
    workerId: made.workerId,
    prefix: options.prefix,
    connection: made.links.connection,
    redis,
    keys,
    log: made.log,
    searchQueue,
    storeQueue: made.links.storeQueue,
    budget: new Budget(redis, keys),
    // A worker is dead once it has been silent as long as its jobs' locks last.
    inflight: new InflightJournal(redis, keys, Math.max(options.lockDurationMs ?? 30_000, 1000)),
    stoppedRuns: new StoppedRuns(redis, keys.stoppedRuns),
    record: made.record,
    searchGate,
    rate: new RateController(
      redis,
      { ...keys.rateOf(keyId), runRateLog: keys.runRateLog, runRateHold: keys.runRateHold },
      made.log,
      {
        keyId,
        onHold: (ms) => searchGate.holdFor(ms),
        ...(options.maxRateHoldMs === undefined ? {} : { maxRateHoldMs: options.maxRateHoldMs }),
      },
    ),
  };
  if (options.client) ctx.client = options.client;
  if (options.store) ctx.store = options.store;
  if (made.writer) ctx.writer = made.writer;
  if (options.metrics) ctx.metrics = options.metrics;
  return ctx;
}

/** Starts the roles asked for into `handles`; those that call the API (and bill) last. */
async function startRoles(
  ctx: RoleContext,
  options: PoolOptions,
  handles: Map<Role, RoleHandle>,
): Promise<void> {
  const ordered = [...options.roles].sort(
    (a, b) => Number(PRODUCERS.includes(a)) - Number(PRODUCERS.includes(b)),
  );
  for (const role of ordered) handles.set(role, await STARTERS[role](ctx, options));
}

function poolOf(workerId: string, running: Running, watch: LostCallsWatch): Pool {
  let closing: Promise<void> | undefined;
  return {
    workerId,
    close() {
      closing ??= closeGracefully(running, watch);
      return closing;
    },
    forceClose: (why) => closeForcibly(running, watch, why),
    async redisLostData() {
      const { log } = running.ctx;
      try {
        const calls = await running.sink.resendQueuedCalls();
        if (calls > 0) log.warn({ calls }, 'Redis lost its data: call records sent again');
      } catch (error) {
        log.error({ err: error }, 'could not send call records again after Redis lost its data');
      }
    },
  };
}

async function closeGracefully(running: Running, watch: LostCallsWatch): Promise<void> {
  watch.stopReaping();
  // Producers first: calls in flight finish and push their records. The heartbeat goes on
  // until those records are durable: a call may take a minute, and a pool that saw this
  // worker fall silent would record its calls as lost meanwhile.
  await closeRoles(running, (role) => PRODUCERS.includes(role));
  await running.sink.drain();
  await watch.stop();
  await closeRoles(running, (role) => !PRODUCERS.includes(role));
  await closeConnections(running);
}

async function closeForcibly(running: Running, watch: LostCallsWatch, why: string): Promise<void> {
  const { ctx, lateAnswers } = running;
  const { log } = ctx;
  lateAnswers.watch();
  watch.stopReaping();
  // No job is taken from here on: its call would begin after the journal was read, and be left
  // for another pool's reaper to find. The jobs in hand are not waited for.
  const producers = [...running.handles].filter(([role]) => PRODUCERS.includes(role));
  for (const [, handle] of producers) void handle.close().catch(() => {});
  const abandoned = await abandonCalls(watch, why, log);
  // A forced stop ends the process: records that cannot be made durable now (Redis away, no
  // writer here) are not waited for. Their calls stay journaled, and another pool records them
  // as lost.
  await within(FORCED_WAIT_MS, running.sink.drain(), () =>
    log.warn('records not yet durable are left to the journal'),
  );
  // Calls begun meanwhile by jobs in hand (one that waited for its rate-limit turn, say).
  abandoned.push(...(await abandonCalls(watch, why, log)));
  await within(FORCED_WAIT_MS, watch.stop());
  ctx.stoppedRuns.close();
  await within(FORCED_WAIT_MS, ctx.writer?.close() ?? Promise.resolve());
  ctx.redis.disconnect();
  ctx.connection.disconnect();
  // Said last, once no record can be made any more: a call whose answer was recorded while the
  // pool stopped is not lost, and `harvest status` counts the same calls.
  const lost = lateAnswers.stillLost(abandoned);
  if (lost > 0) log.warn({ lost }, 'calls in flight recorded as lost');
}

/** This pool's calls in flight recorded as LOST (./lost-calls.ts); their ids. */
function abandonCalls(watch: LostCallsWatch, why: string, log: Logger): Promise<string[]> {
  return watch.abandonOwnCalls(why).catch((error: unknown) => {
    log.error({ err: error }, 'could not record the calls in flight as lost');
    return [];
  });
}

async function closeRoles(running: Running, which: (role: Role) => boolean): Promise<void> {
  await Promise.all([...running.handles].filter(([role]) => which(role)).map(([, h]) => h.close()));
}

async function closeConnections({ ctx }: Running): Promise<void> {
  ctx.stoppedRuns.close();
  await ctx.writer?.close();
  await ctx.searchQueue.close();
  await ctx.storeQueue.close();
  await ctx.client?.close();
  await ctx.redis.quit().catch(() => {});
  await ctx.connection.quit().catch(() => {});
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
