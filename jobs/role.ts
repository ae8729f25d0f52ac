/**
 * What every role of a pool gets, and what it gives back. A role is a BullMQ worker (or
 * several) on one queue with the processor of jobs/, wired to the pieces the pool shares.
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
 * What a pool tells its Prometheus metrics (src/metrics/registry.ts), when it serves any:
 * what only this process knows. Everything else is read when scraped.
 */
export interface RoleContext {
  workerId: string;
  /** Redis key prefix of every queue. */
  prefix: string;
  /** The connection BullMQ workers block on (`maxRetriesPerRequest: null`). */
  connection: Redis;
  /** A client connection for harvest's own keys. */
  redis: Redis;
  keys: HarvestKeys;
  log: Logger;
  searchQueue: Queue;
  storeQueue: Queue;
  budget: Budget;
  inflight: InflightJournal;
  /** Runs their user stopped; their jobs are dropped when they start. */
  stoppedRuns: StoppedRuns;
  /** Held while media in this process is urgent: searches here then wait (search-gate.ts). */
  searchGate: SearchGate;
  /**
   * The pool's one turn-taker of the shared rate limit: searches and media re-issues alike, so
   * what it observes (the pool's rate, after a 429 that says no count) is all of the pool's.
   */
  rate: RateController;
  /** Makes events durable (committed, or in the store queue), trying again until they are. */
  record(events: StoreEvent[]): Promise<void>;
  /** The API client, when the pool has one (any role that calls the API). */
  client?: ApiClient;
  /** The database, when this pool runs on its host. */
  store?: Store;
  /** The database's one writer, when this pool has the store role. */
  writer?: EventWriter;
  /** The pool's metrics, when it serves them (`harvest worker --metrics-port`). */
  metrics?: PoolMetrics;
}

export interface RoleHandle {
  /** Stops taking jobs and finishes the ones in hand (their records pushed, maybe not durable). */
  close(): Promise<void>;
}
