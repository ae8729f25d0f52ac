/**
 * What every role of a pool gets, and what it gives back. A role is a BullMQ worker (or
 * several) on one queue running that queue's processor (jobs/<queue>/processor.ts), wired by
 * jobs/<queue>/role.ts to the pieces the pool (jobs/pool.ts) makes once and shares.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ApiClient } from '../src/api/index.ts';
import type { StoreEvent } from '../src/events/store.ts';
import type { Logger } from '../src/log.ts';
import type { PoolMetrics } from '../src/metrics/pool.ts';
import type { Budget } from '../src/queue/budget.ts';
import type { InflightJournal } from '../src/queue/inflight.ts';
import type { HarvestKeys } from '../src/queue/names.ts';
import type { RateController } from '../src/queue/rate/controller.ts';
import type { StoppedRuns } from '../src/queue/stopped-runs.ts';
import type { EventWriter, Store } from '../src/store/index.ts';
import type { SearchGate } from './search/gate.ts';

/**
 * The pieces a pool shares with its roles. The pool opens and closes them; a role closes only
 * what it opened itself. Optional fields are there only when the pool's options have them.
 */
export interface RoleContext {
  /** This pool's id: its heartbeat, its journaled calls and its partial files carry it. */
  workerId: string;
  /** Redis key prefix of every queue. */
  prefix: string;
  /** The connection BullMQ workers and queues block on (`maxRetriesPerRequest: null`). */
  connection: Redis;
  /** A client connection for harvest's own keys. */
  redis: Redis;
  /** Names of harvest's own Redis keys under `prefix`. */
  keys: HarvestKeys;
  /** The pool's logger, bound to `workerId`. */
  log: Logger;
  /** The search queue: runs started here fill it, the store role's feeder tops it up. */
  searchQueue: Queue;
  /** The store queue: records that go to no writer here wait there for the store role. */
  storeQueue: Queue;
  /** Each run's credits spent and reserved, shared by every host (src/queue/budget.ts). */
  budget: Budget;
  /** Calls in flight, journaled before they are sent: a crash loses none (queue/inflight.ts). */
  inflight: InflightJournal;
  /** Runs their user stopped; their jobs are dropped when they start. */
  stoppedRuns: StoppedRuns;
  /** Held while media in this process is urgent: searches here then wait (jobs/search/gate.ts). */
  searchGate: SearchGate;
  /**
   * The pool's one turn-taker of the shared rate limit: searches and media re-issues alike, so
   * what it observes (the pool's rate, after a 429 that says no count) is all of the pool's.
   */
  rate: RateController;
  /**
   * Makes events durable (committed, or in the store queue), trying again until they are; the
   * pool's metrics count what it made durable.
   */
  record(events: StoreEvent[]): Promise<void>;
  /** The API client, when the pool has one (the search role; the media role to re-issue). */
  client?: ApiClient;
  /** The database, when this pool runs on its host (the store, runs and media roles). */
  store?: Store;
  /** The database's one writer, when this pool has the store role. */
  writer?: EventWriter;
  /** What roles tell the pool's metrics, when it serves them (`harvest worker --metrics-port`). */
  metrics?: Pick<PoolMetrics, 'tick' | 'notification'>;
}

export interface RoleHandle {
  /** Stops taking jobs and finishes the ones in hand (their records pushed, maybe not durable). */
  close(): Promise<void>;
}
