/**
 * The feeder: keeps the search queue topped up to the queue window from SQLite, for runs
 * larger than the window (see ./enqueue-run.ts). It runs in every pool with the store role
 * (the host that owns the database, `harvest run --local` included), but only the holder of a
 * Redis lease feeds: one feeder at a time whatever the number of such pools. The lease lasts
 * `leaseMs` and is renewed at each round; when its holder dies, another takes over once it
 * expires, from the cursors in Redis (src/run/feed/state.ts). A `preferred` feeder (`run
 * --wait`, which holds the database and is idle while it waits) asks for the lease, and the
 * holder lets go of it between two rounds, so the lease never changes hands mid-round.
 *
 * Each round: count the jobs in the queue (all runs); if the room left in the window is worth
 * a batch, give it to the runs being fed, oldest run first, each in task-key order: the order
 * a run enqueued whole would have. A run that is stopped (cancelled, interrupted) or finished
 * loses its entry; a resume gives it a new one.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../../log.ts';
import { searchJob } from '../../queue/enqueue.ts';
import type { HarvestKeys } from '../../queue/names.ts';
import type { Store } from '../../store/index.ts';
import { searchJobsOf } from '../enqueue-run.ts';
import { FeedPages } from './page.ts';
import { FeedState, jobsInQueue, type StoredFeedEntry } from './state.ts';

export interface FeederOptions {
  /** Search jobs Redis may hold at once (`HARVEST_QUEUE_WINDOW`). */
  windowJobs: number;
  /** How often the queue is counted, in ms. Default 100. */
  pollMs?: number;
  /** How long the lease outlives a silent holder, in ms. Default 10000. */
  leaseMs?: number;
  /**
   * Ask for the lease before other feeders: the holder lets go of it after its current round.
   * `run --wait` feeds so while it waits (src/cli/actions/run.ts). Default false.
   */
  preferred?: boolean;
}

export interface FeederDeps {
  store: Store;
  queue: Queue;
  redis: Redis;
  keys: HarvestKeys;
  /** This process's id (the pool's worker id): the lease's value. */
  owner: string;
  log: Logger;
}

/** Tasks read from SQLite and enqueued at a time. */
const FEED_PAGE = 1000;

/** Run statuses whose tasks are fed; any other status ends the run's feeding. */
const FED_STATUSES = new Set(['queued', 'running', 'paused']);

export class Feeder {
  readonly #deps: FeederDepsWithState;
  readonly #windowJobs: number;
  readonly #pollMs: number;
  readonly #leaseMs: number;
  readonly #preferred: boolean;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<unknown> = Promise.resolve();
  #stopped = false;
  #leading = false;
  /** Made at the first page fed: it opens a connection of its own. */
  #pages: FeedPages | undefined;

  constructor(deps: FeederDeps, options: FeederOptions) {
    this.#deps = { ...deps, feed: new FeedState(deps.redis, deps.keys) };
    this.#windowJobs = options.windowJobs;
    this.#pollMs = options.pollMs ?? 100;
    this.#leaseMs = options.leaseMs ?? 10_000;
    this.#preferred = options.preferred ?? false;
  }

  /** Rounds every `pollMs` until `stop`. */
  start(): void {
    const next = () => {
      if (this.#stopped) return;
      this.#round = this.feedOnce()
        .catch((error: unknown) => this.#deps.log.warn({ err: error }, 'feeding runs failed'))
        .finally(() => {
          if (!this.#stopped) this.#timer = setTimeout(next, this.#pollMs);
        });
    };
    next();
  }

  /** Ends the rounds and frees the lease, so another feeder takes over at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#round;
    await this.#deps.feed.release(this.#deps.owner).catch(() => {});
    await this.#pages?.close().catch(() => {});
  }

  /** One round; returns how many jobs it enqueued. */
  async feedOnce(): Promise<number> {
    const { feed, owner, log, queue } = this.#deps;
    const leading = await feed.hold(owner, this.#leaseMs, { preferred: this.#preferred });
    if (leading !== this.#leading) {
      this.#leading = leading;
      log.debug({ owner }, leading ? 'feeding runs from SQLite' : 'another process feeds runs');
    }
    if (!leading) return 0;
    const entries = await feed.all();
    if (entries.length === 0) return 0;
    let room = this.#windowJobs - (await jobsInQueue(queue));
    // Not worth a round trip for a few jobs while plenty wait.
    if (room < Math.min(1000, Math.ceil(this.#windowJobs / 10))) return 0;
    let fed = 0;
    for (const entry of entries) {
      if (room <= 0 || this.#stopped) break;
      const n = await this.#feedRun(entry, room);
      if (n === undefined) break;
      fed += n;
      room -= n;
    }
    return fed;
  }

  /**
   * Up to `room` jobs of one run, read and enqueued `FEED_PAGE` at a time (so memory stays flat
   * whatever the window); undefined when the lease was lost meanwhile.
   */
  async #feedRun(stored: StoredFeedEntry, room: number): Promise<number | undefined> {
    const { store, queue, feed, owner, log } = this.#deps;
    const { runId } = stored;
    const run = store.runs.get(runId);
    if (!run || !FED_STATUSES.has(run.status)) {
      return (await feed.advance(owner, stored, undefined)) === 'not-leader' ? undefined : 0;
    }
    let current = stored;
    let fed = 0;
    this.#pages ??= new FeedPages(
      this.#deps.redis,
      { name: queue.name, prefix: queue.opts.prefix ?? 'bull' },
      this.#deps.keys,
    );
    while (fed < room && !this.#stopped) {
      const want = Math.min(room - fed, FEED_PAGE);
      const tasks = store.tasks.unfinishedAfter(runId, current.entry.after, want);
      // Tasks whose jobs were live when the run was resumed are worked as they are.
      const live =
        tasks.length === 0
          ? []
          : await this.#deps.redis.smismember(
              this.#deps.keys.feedLive(runId),
              ...tasks.map((t) => t.key),
            );
      const toAdd = tasks.filter((_, i) => live[i] !== 1);
      const jobs = [...searchJobsOf(runId, toAdd, current.entry)].map(searchJob);
      const last = tasks.at(-1);
      // Fewer than asked for: the run's last tasks are in the queue, and its feeding ends.
      const next = tasks.length < want || !last ? undefined : { ...current.entry, after: last.key };
      // The page and the cursor's move, together or not at all (feed-page.ts).
      const moved = await this.#pages.addAndAdvance(owner, current, jobs, next);
      if (moved === 'not-leader') return undefined;
      if (moved === 'moved') fed += jobs.length;
      if (moved === 'changed' || next === undefined) {
        if (moved === 'moved') log.debug({ runId }, 'run fully enqueued');
        break;
      }
      current = { runId, raw: JSON.stringify(next), entry: next };
    }
    return fed;
  }
}

type FeederDepsWithState = FeederDeps & { feed: FeedState };
