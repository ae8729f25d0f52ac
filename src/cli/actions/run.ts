/**
 * What `harvest run` (and `harvest demo`) does, loaded only when it runs: check the settings,
 * record and enqueue the run (or resume one), start local workers with --local, follow the run
 * to its end, and handle Ctrl-C.
 *
 * Over 300 lines: one session of `harvest run` (RunSession) owns the pool, the feeder, the
 * Redis watch and both stages of Ctrl-C, whose order of shutdown matters; splitting it would
 * spread that order over several files.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLocalPool } from '../../../jobs/local.ts';
import type { Pool } from '../../../jobs/pool.ts';
import { createApiClient } from '../../api/index.ts';
import { describeOutage } from '../../api/outage.ts';
import { maskUrl, type Settings } from '../../config.ts';
import { UsageError } from '../../errors.ts';
import { createLogger, type Logger } from '../../log.ts';
import { Feeder } from '../../run/feed/feeder.ts';
import { liftKeyPauseIfFixed } from '../../run/key-pause.ts';
import { resumeRun } from '../../run/resume.ts';
import { openRuntime, type Runtime } from '../../run/runtime.ts';
import { type LoadedPipeline, loadValidPipeline, startRun } from '../../run/start.ts';
import { stopRun } from '../../run/stop.ts';
import type { Progress } from '../../run/wait.ts';
import { waitForRun } from '../../run/wait.ts';
import { replacedError } from '../../store/db.ts';
import type { CommandContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { printMigration } from '../migration-notice.ts';
import { createProgressView, formatSummary } from '../progress.ts';
import {
  isMissingJobLog,
  isRedisConnectionLog,
  type RedisWatch,
  watchRedis,
} from '../redis-watch.ts';
import { onStopSignals, restoreTerminal } from '../signals.ts';
import { terminalText } from '../terminal-text.ts';

/**
 * Exit codes: 0 every task done (and its media saved, when followed), 1 some task failed or
 * some media was not saved, 4 not finished (paused for the API key or a full disk, interrupted,
 * cancelled, or no longer followed).
 */
export function exitCodeFor(p: Progress): number {
  if (p.status !== 'completed' && p.status !== 'failed') return EXIT.NOT_FINISHED;
  if (p.mediaPaused) return EXIT.NOT_FINISHED;
  const mediaLost = (p.media?.failed ?? 0) + (p.media?.expired ?? 0);
  return p.failed === 0 && mediaLost === 0 && p.status === 'completed' ? EXIT.OK : EXIT.FAILED;
}

export interface RunOptions {
  wait?: boolean;
  local?: boolean;
  concurrency?: number;
  resume?: string;
  retryFailed?: boolean;
  json?: boolean;
  /** Stop following after the API has been unreachable this long, in ms (exit 3). */
  giveUpAfter?: number;
}

/** A run started or resumed; `planInterrupted` when stopped while its plan was written. */
interface Started {
  runId: string;
  concurrency: number | undefined;
  planInterrupted?: { tasks: number };
}

/** Set once Redis has come back without the run's jobs: their errors are expected then. */
const lostJobs = { value: false };
/** Set once Redis has gone away: jobs it may have lost are expected to be missing then. */
const redisLost = { value: false };

/** How long `run --wait` waits for a worker before it says none is taking jobs, in ms. */
const NO_WORKER_NOTICE_MS = 10_000;

/** How long a forced stop waits for the first Ctrl-C's stop of the run to end, in ms. */
const RUN_STOP_WAIT_MS = 5000;

export async function runCommand(
  ctx: CommandContext,
  file: string | undefined,
  opts: RunOptions,
): Promise<number> {
  const settings = ctx.settings();
  // Redis going away is said once by the session's watch: its repeats stay out of the logs.
  const logger = createLogger({
    level: settings.logLevel ?? 'warn',
    format: settings.logFormat,
    drop: (line) => isRedisConnectionLog(line) || (redisLost.value && isMissingJobLog(line)),
  });
  // A bad file or a missing key is reported before anything else is touched.
  const loaded = file ? await loadValidPipeline(file) : undefined;
  if (opts.local) requireApiKey(settings);
  const runtime = await openRuntime(settings, {
    onMigrate: printMigration,
    mustExist: opts.resume !== undefined,
  });
  const session = new RunSession(runtime, settings, logger, opts);
  try {
    return await session.run(loaded);
  } finally {
    await session.close();
  }
}

function requireApiKey(settings: Settings): void {
  if (!settings.apiKey) {
    throw new UsageError(
      'HARVEST_API_KEY is not set: local workers need an API key (try `npm start` for the offline sandbox demo)',
    );
  }
}

/** One invocation of `harvest run`: the run, its local pool, and what Ctrl-C does to them. */
class RunSession {
  readonly #runtime: Runtime;
  readonly #settings: Settings;
  readonly #logger: Logger;
  readonly #opts: RunOptions;
  readonly #stopWaiting = new AbortController();
  readonly #stopEnqueuing = new AbortController();
  #runId: string | undefined;
  /** The run whose plan is being written, until it is written or stopped. */
  #planning: string | undefined;
  #pool: Pool | undefined;
  #feeder: Feeder | undefined;
  #interrupted = false;
  /** When this command started: an API unanswered since then was never reachable from here. */
  readonly #startedAt = Date.now();
  /** Why following stopped for an unreachable API (the message said before exit 3). */
  #apiGone: string | undefined;
  /** The first Ctrl-C's stop, once it has begun. */
  #interrupting: Promise<void> | undefined;
  /** The first Ctrl-C's stop of a local run (marked interrupted, queued jobs removed). */
  #runStopping: Promise<boolean> | undefined;

  constructor(runtime: Runtime, settings: Settings, logger: Logger, opts: RunOptions) {
    this.#runtime = runtime;
    this.#settings = settings;
    this.#logger = logger;
    this.#opts = opts;
  }

  async run(loaded: LoadedPipeline | undefined): Promise<number> {
    await this.#liftKeyPause();
    // Kept until the process ends: a second Ctrl-C that arrives while the run is being closed
    // must still stop it at once rather than kill it by the signal's default action.
    // A local run's stop is forced once the grace period is over: a call or a download that
    // trickles does not hold the process.
    onStopSignals(
      {
        first: () => this.#interrupt(),
        second: () => this.#forceStop(),
      },
      this.#opts.local ? this.#settings.stopGraceMs : undefined,
    );
    const { runId, concurrency, planInterrupted } = await this.#startOrResume(loaded);
    if (planInterrupted) return this.#planInterrupted(runId, planInterrupted.tasks);
    if (this.#opts.local) {
      this.#pool = await startLocalPool(this.#settings, {
        roles: ['search', 'store', 'media'],
        concurrency: this.#opts.concurrency ?? concurrency,
        store: this.#runtime.store,
        logger: this.#logger,
      });
    }
    if (!this.#opts.wait && !this.#opts.local) {
      process.stdout.write(
        this.#opts.json ? `${JSON.stringify({ runId }, null, 2)}\n` : `${runId}\n`,
      );
      process.stderr.write(
        `enqueued; start workers with \`harvest worker\`, follow with \`harvest status ${runId}\`\n`,
      );
      return EXIT.OK;
    }
    return this.#follow(runId);
  }

  async close(): Promise<void> {
    // The store worker takes the lease back at its next round. Also after an error: a feeder
    // left running would keep the process up.
    await this.#feeder?.stop().catch(() => {});
    await this.#pool?.close();
    await this.#runtime.close();
  }

  /** A pause for the API key is lifted when the key works again (see key-pause.ts). */
  async #liftKeyPause(): Promise<void> {
    const { apiKey, apiUrl } = this.#settings;
    const client = apiKey ? createApiClient({ baseUrl: apiUrl, apiKey }) : undefined;
    try {
      const probe = await liftKeyPauseIfFixed(this.#runtime, client, {
        // Said as it happens: the check may wait for the service a while.
        onRetry: ({ error, attempt, maxAttempts, waitMs }) =>
          process.stderr.write(
            `checking the API key: ${terminalText(error.message)}; again in ${(waitMs / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${maxAttempts})\n`,
          ),
      });
      if (probe.kind === 'lifted') {
        process.stderr.write(`the API key works again: the search queue is resumed\n`);
      } else if (probe.kind === 'no-key') {
        process.stderr.write(
          `warning: the search queue is paused for the API key (${probe.pause.code}: ${terminalText(probe.pause.reason)}); ` +
            'set HARVEST_API_KEY here so harvest can check it, or resume a run once it is fixed\n',
        );
      }
    } finally {
      await client?.close();
    }
  }

  async #startOrResume(loaded: LoadedPipeline | undefined): Promise<Started> {
    try {
      return await this.#startOrResumeRun(loaded);
    } finally {
      this.#planning = undefined;
    }
  }

  async #startOrResumeRun(loaded: LoadedPipeline | undefined): Promise<Started> {
    const planning = {
      onPlanning: (runId: string) => {
        this.#planning = runId;
      },
      signal: this.#stopEnqueuing.signal,
    };
    if (this.#opts.resume) {
      const resumed = await resumeRun(this.#runtime, this.#opts.resume, {
        logger: this.#logger,
        retryFailed: this.#opts.retryFailed,
        ...planning,
      });
      const concurrency = resumed.pipeline.run?.concurrency;
      if (resumed.interrupted) {
        return { runId: resumed.runId, concurrency, planInterrupted: { tasks: resumed.taskCount } };
      }
      this.#runId = resumed.runId;
      if (resumed.retried > 0)
        process.stderr.write(`${resumed.retried} failed tasks enqueued again\n`);
      const failed = this.#runtime.store.tasks.counts(resumed.runId).failed;
      if (!this.#opts.retryFailed && failed > 0) {
        process.stderr.write(
          `${failed} failed tasks stay failed: \`harvest run --resume ${resumed.runId} --retry-failed\` tries them again\n`,
        );
      }
      if (resumed.redrivenStoreJobs > 0) {
        process.stderr.write(
          `${resumed.redrivenStoreJobs} batches of records waiting for the database were sent back to the store queue\n`,
        );
      }
      return { runId: resumed.runId, concurrency };
    }
    const started = await startRun(this.#runtime, loaded!, {
      logger: this.#logger,
      onRecorded: (runId) => {
        this.#runId = runId;
      },
      ...planning,
    });
    const concurrency = started.pipeline.run?.concurrency;
    if (started.interrupted) {
      return { runId: started.runId, concurrency, planInterrupted: { tasks: started.taskCount } };
    }
    for (const w of started.warnings) process.stderr.write(`${w}\n`);
    process.stderr.write(
      `run ${started.runId}: ${started.taskCount} tasks, estimated ${started.estimate.min}..${started.estimate.max} credits\n`,
    );
    return { runId: started.runId, concurrency };
  }

  /**
   * Stopped while its plan was written: the run is `interrupted` with no job in Redis, so no
   * worker takes it. Says so and how to go on; exit 4 (not finished).
   */
  #planInterrupted(runId: string, tasks: number): number {
    const how = this.#opts.local ? ' --local' : ' --wait';
    const message =
      `run ${runId} stopped while planning: it is interrupted, with ${tasks} tasks of its plan ` +
      `recorded and none enqueued; \`harvest run --resume ${runId}${how}\` writes the rest of ` +
      `its plan and runs it, \`harvest cancel ${runId}\` gives it up`;
    process.stderr.write(`\n${message}\n`);
    if (this.#opts.json) {
      const error = { code: 'PLAN_INTERRUPTED', message, exitCode: EXIT.NOT_FINISHED, runId };
      process.stdout.write(`${JSON.stringify({ ok: false, error }, null, 2)}\n`);
    }
    return EXIT.NOT_FINISHED;
  }

  async #follow(runId: string): Promise<number> {
    const view = createProgressView();
    this.#onForced = () => view.stop();
    let noticed = false;
    const watch = await this.#watchRedis();
    // A local pool feeds the run itself (its store role).
    if (!this.#opts.local) this.#feeder = this.#startFeeder();
    const since = Date.now();
    // The database deleted or replaced under the run: its records wait in Redis, unwritten.
    let replaced = false;
    let final = await waitForRun(this.#runtime, runId, {
      since,
      signal: this.#stopWaiting.signal,
      noWorkerAfterMs: this.#opts.local ? undefined : NO_WORKER_NOTICE_MS,
      // A local pool saves the run's media too: the run is done once its media is.
      waitForMedia: this.#opts.local === true,
      onProgress: (p) => {
        view.update(p);
        this.#watchOutage(p);
        if (!replaced && this.#runtime.store.replaced()) {
          replaced = true;
          this.#stopWaiting.abort();
        }
        if (p.noWorker && !noticed) {
          noticed = true;
          process.stderr.write(
            `\nno worker is taking search jobs: start one with \`harvest worker\` (the run waits in the queue)\n`,
          );
        }
      },
    });
    await watch.close();
    view.stop();
    if (replaced) throw replacedError(this.#runtime.store.path);
    if (this.#interrupting) {
      // The stop marks the run interrupted at once, which ends the wait, while the calls in
      // flight are still being recorded as the pool closes: the summary waits for them.
      await this.#interrupting;
      final = await waitForRun(this.#runtime, runId, { since, signal: AbortSignal.abort() });
    }
    const exitCode = this.#apiGone
      ? EXIT.ENVIRONMENT
      : lostJobs.value
        ? EXIT.NOT_FINISHED
        : exitCodeFor(final);
    if (this.#opts.json) {
      // `ok` and `exitCode` as in every --json answer: a script reads the outcome, not the code.
      const answer = { ok: exitCode === EXIT.OK, exitCode, ...final };
      process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    } else process.stdout.write(`${formatSummary(final, this.#settings.dbPath)}\n`);
    if (this.#apiGone) {
      // The last error quotes the network or the API: escaped, so it cannot drive the terminal.
      process.stderr.write(`${terminalText(this.#apiGone)}\n`);
      return exitCode;
    }
    if (lostJobs.value) {
      process.stderr.write(
        `resume with: harvest run --resume ${runId}${this.#opts.local ? ' --local' : ' --wait'} (SQLite knows every unfinished task)\n`,
      );
      return exitCode;
    }
    if (final.status === 'interrupted' || final.status === 'cancelled' || final.paused) {
      process.stderr.write(
        `resume with: harvest run --resume ${runId}${this.#opts.local ? ' --local' : ' --wait'}\n`,
      );
    } else if (this.#interrupted) {
      process.stderr.write(
        `the run goes on with the workers; follow it with \`harvest status ${runId}\`\n`,
      );
    }
    return exitCode;
  }

  #onForced: () => void = () => {};

  /**
   * While the API is unreachable the run is followed, unless it never answered this command's
   * own pool (a wrong HARVEST_API_URL, say) or `--give-up-after` has passed. Then a local run
   * is stopped as by Ctrl-C, and the command ends saying how to resume (exit 3).
   */
  #watchOutage(p: Progress): void {
    const outage = p.apiOutage;
    if (this.#apiGone || !outage) return;
    const neverAnswered =
      this.#opts.local === true &&
      outage.lastFailureAt >= this.#startedAt &&
      outage.answeredAt < this.#startedAt;
    const giveUpAfter = this.#opts.giveUpAfter;
    const waited = Date.now() - Math.max(outage.since, this.#startedAt);
    if (!neverAnswered && (giveUpAfter === undefined || waited < giveUpAfter)) return;
    const how = `${this.#opts.local ? ' --local' : ' --wait'}${p.failed > 0 ? ' --retry-failed' : ''}`;
    const resume = `resume with: harvest run --resume ${p.runId}${how}`;
    this.#apiGone = neverAnswered
      ? `the API at ${maskUrl(this.#settings.apiUrl)} is not reachable (${outage.lastError}), and has not answered since this command started: check HARVEST_API_URL and the network; ${resume}`
      : `${describeOutage(outage, Date.now())}: gave up after ${Math.round(giveUpAfter! / 1000)} s (--give-up-after); ${resume}`;
    if (this.#opts.local) void this.#interrupt(true);
    else this.#stopWaiting.abort();
  }

  /**
   * A forced stop while the plan is written (between two batches: no transaction is open): the
   * run is marked interrupted here, as the planning loop would have at its next batch.
   */
  #planStopped(runId: string): void {
    try {
      this.#runtime.store.runs.setStatus(runId, 'interrupted');
      process.stderr.write(
        `\nrun ${runId} stopped at once while planning: it is interrupted, none of its tasks enqueued; ` +
          `\`harvest run --resume ${runId}\` writes the rest of its plan and runs it\n`,
      );
    } catch (error) {
      this.#logger.error({ err: error }, 'could not mark the run interrupted');
    }
  }

  /** The run's queued jobs are gone from Redis: a local run stops, and the command says how to resume. */
  #jobsGone(why: string): void {
    lostJobs.value = true;
    process.stderr.write(`\n${why}\n`);
    void this.#interrupt(true);
  }

  /**
   * One line when Redis stops answering, one when it is back. Back with its data, the run goes
   * on by itself; back empty, the run's queued jobs are gone: a local run is stopped as
   * interrupted, and the command ends saying how to resume.
   */
  #watchRedis(): Promise<RedisWatch> {
    return watchRedis(this.#settings.redisUrl, this.#settings.queuePrefix, {
      lost: (where, reason) => {
        redisLost.value = true;
        process.stderr.write(
          `\nRedis at ${where} is not reachable (${reason}): waiting for it to come back; ` +
            'what was recorded is safe in SQLite (Ctrl-C to stop)\n',
        );
      },
      back: (keptData) => {
        if (keptData) {
          process.stderr.write('Redis is back: the run goes on\n');
          return;
        }
        this.#jobsGone(
          `Redis came back without the run's queued jobs (it restarted without saving them)`,
        );
      },
      emptied: () =>
        this.#jobsGone(
          `Redis lost the run's queued jobs (its keys were deleted while it answered)`,
        ),
    });
  }

  /**
   * While it waits, `run` feeds runs larger than the queue window from SQLite (it holds the
   * database, and its loop is idle): it asks for the feeder lease, which the store worker lets
   * go of between two rounds and takes back once this command ends. Enqueuing the window's
   * next jobs then costs the store worker's loop nothing, where that worker also runs searches
   * on the same cores (`worker` with its default roles, say).
   */
  #startFeeder(): Feeder {
    const { store, searchQueue, redis, keys } = this.#runtime;
    const feeder = new Feeder(
      {
        store,
        queue: searchQueue,
        redis,
        keys,
        owner: `run-${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
        // A round that fails is tried again at the next; Redis going away is said by the watch.
        log: this.#logger,
      },
      { windowJobs: this.#settings.queueWindow, preferred: true },
    );
    feeder.start();
    return feeder;
  }

  /**
   * First Ctrl-C. A local run is stopped (its queued jobs leave the queue, calls in flight
   * finish and are recorded, it shows as interrupted); a run worked elsewhere goes on, and
   * this command stops following it.
   */
  #interrupt(quietly = false): Promise<void> {
    this.#interrupting ??= this.#stop(quietly);
    return this.#interrupting;
  }

  /** The first Ctrl-C's work (`#interrupt`), once. */
  async #stop(quietly: boolean): Promise<void> {
    this.#interrupted = true;
    this.#stopEnqueuing.abort();
    if (this.#opts.local && this.#runId) {
      if (!quietly) {
        process.stderr.write(
          `\nstopping run ${this.#runId}: calls in flight finish and are recorded, for ${this.#settings.stopGraceMs / 1000} s at most (Ctrl-C again to stop at once)\n`,
        );
      }
      this.#runStopping = stopRun(this.#runtime, this.#runId, 'interrupted').then(
        () => true,
        (error: unknown) => {
          this.#logger.error({ err: error }, 'could not stop the run');
          return false;
        },
      );
      await this.#runStopping;
      await this.#pool?.close();
    }
    this.#stopWaiting.abort();
  }

  /**
   * Second Ctrl-C: the run is marked interrupted (if the first Ctrl-C's stop is under way, it
   * ends first), calls in flight are recorded as lost, and the process ends (exit 4).
   */
  async #forceStop(): Promise<void> {
    this.#onForced();
    restoreTerminal();
    // While the plan is written nothing is in flight: the run is marked interrupted.
    const planning = this.#planning;
    if (planning) this.#planStopped(planning);
    else
      process.stderr.write('\nstopping now: calls in flight are recorded as lost (cost unknown)\n');
    // The first Ctrl-C's stop of the run must end first: a run left `running` keeps its queued
    // jobs, and any other pool on this queue would search them. It is waited for a while only
    // (Redis may be what hangs).
    if (this.#runStopping) {
      const stopped = await Promise.race([this.#runStopping, sleep(RUN_STOP_WAIT_MS, false)]);
      if (!stopped && this.#runId) {
        process.stderr.write(
          `run ${this.#runId} could not be marked interrupted: \`harvest cancel ${this.#runId}\` takes its jobs off the queue\n`,
        );
      }
    }
    // The feeder lets go of its lease once its round ends; if that takes long, the lease lapses.
    await Promise.race([this.#feeder?.stop(), sleep(1000)]).catch(() => {});
    await this.#pool
      ?.forceClose('stopped by the user before the answer arrived; the cost is unknown')
      .catch(() => {});
    if (this.#opts.json) {
      // --json prints JSON whatever happens: the error's usual shape, written out before exit.
      const runId = this.#runId ?? planning;
      const run = runId ? `run ${runId}` : 'the run';
      const error = {
        code: 'FORCED_STOP',
        message: planning
          ? `${run} stopped at once by a second Ctrl-C while planning: it is interrupted, none of its tasks enqueued`
          : `${run} stopped at once by a second Ctrl-C: calls in flight are recorded as lost (cost unknown)`,
        exitCode: EXIT.NOT_FINISHED,
        ...(runId ? { runId } : {}),
      };
      const text = `${JSON.stringify({ ok: false, error }, null, 2)}\n`;
      // Flushed before the exit; a reader that does not read does not hold the stop for long.
      const written = new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));
      await Promise.race([written, sleep(1000)]);
    }
    process.exit(EXIT.NOT_FINISHED);
  }
}
