/**
 * The shared rate controller of one API key: the rules of src/queue/rate/model.ts applied to a
 * model kept in Redis under the key's id (`rateOf` in src/queue/names.ts), and the calls made
 * with that key counted there (src/queue/rate/scripts.ts), so every worker on every host that
 * uses the key obeys one learned limit. The service limits each team: a pool with another key
 * has a model of its own and never waits for this one.
 *
 * A worker asks `beforeCall()` before each call. When the call may not go (the window's allowance
 * is spent, a 429's wait is not over, or its turn is further off than `maxHoldMs`), this
 * process's search workers are held (`onHold`: they take no job meanwhile) and the job goes back
 * to waiting without spending an attempt (the processor throws `RateLimitError`). Other
 * processes on the key find the same answer at their next call. No hold is longer than
 * `maxRateHoldMs` (src/queue/rate/hold.ts).
 *
 * A run's own `run.rateLimitPerMinute` is counted apart (`runs`, src/queue/rate/run-limit.ts):
 * it paces that run's calls and never another's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Logger } from '../../log.ts';
import type { TurnClaim } from '../call-claim.ts';
import { evalScript } from '../lua.ts';
import type { HarvestKeys } from '../names.ts';
import { onQuiet } from './aimd.ts';
import { capLesson, capSignal, DEFAULT_MAX_RATE_HOLD_MS, type HoldCause } from './hold.ts';
import {
  DEFAULT_WINDOW_MS,
  defaultGuardMs,
  learn,
  OPEN_MODEL,
  type RateModel,
  type Regime,
} from './model.ts';
import { RunRateLimit } from './run-limit.ts';
import { ADMIT, HOLD, READ, WRITE } from './scripts.ts';
import { readRateLimitSignal } from './signal.ts';

/** A learned model is forgotten this long after it last changed, in ms, so a raised plan limit is found again. */
export const MODEL_TTL_MS = 3_600_000;
/** How long an idle call log lives, in ms. */
const LOG_IDLE_MS = 60_000;
const OBSERVE_WINDOW_MS = 10_000;
const WRITE_TRIES = 8;
/** Admissions a call may ask for, waiting in between, before its job goes back to the queue. */
const MAX_ADMIT_TRIES = 3;

/** What `beforeCall` hands back for a call that may go: the model version it was admitted under. */
export interface RateTicket {
  version: number;
  /** What the claim given to `beforeCall` did (`CLAIM` of src/queue/call-claim.ts); 0 without one. */
  claim: number;
}

export interface RateControllerOptions {
  /** A call whose turn is at most this far off waits in its worker instead of going back to the queue, in ms. Default 2000. */
  maxHoldMs?: number;
  /** Longest hold of the key's calls, in ms (`HARVEST_MAX_RATE_HOLD_MS`). Default 600000. */
  maxRateHoldMs?: number;
  /** Told of each hold of this process's calls, in ms: its search workers take no job meanwhile. */
  onHold?: (ms: number) => void;
  /** The key's id (`apiKeyId`), for the logs. */
  keyId?: string;
}

const MODES: Record<Regime, string> = {
  open: 'open',
  fixed: 'window',
  rolling: 'log',
  paced: 'pace',
};

export class RateController {
  readonly #redis: Redis;
  readonly #keys: Pick<HarvestKeys, 'rate' | 'rateLog'>;
  /** Runs' own limits (`run.rateLimitPerMinute`); absent without their keys. */
  readonly runs: RunRateLimit | undefined;
  readonly #logger: Logger;
  readonly #maxHoldMs: number;
  readonly #maxRateHoldMs: number;
  readonly #onHold: ((ms: number) => void) | undefined;
  readonly #keyId: string | undefined;
  #successes: number[] = [];
  #lastQuietCheck = 0;
  #heldUntil = 0;

  /** `keys`: the key's model and log (`rateOf`), and where runs' own limits live. */
  constructor(
    redis: Redis,
    keys: Pick<HarvestKeys, 'rate' | 'rateLog'> &
      Partial<Pick<HarvestKeys, 'runRateLog' | 'runRateHold'>>,
    logger: Logger,
    options: RateControllerOptions = {},
  ) {
    this.#redis = redis;
    this.#keys = { rate: keys.rate, rateLog: keys.rateLog };
    this.#logger = logger;
    this.#maxHoldMs = options.maxHoldMs ?? 2000;
    const { runRateLog, runRateHold } = keys;
    this.runs =
      runRateLog && runRateHold
        ? new RunRateLimit(redis, { runRateLog, runRateHold }, logger, this.#maxHoldMs)
        : undefined;
    this.#maxRateHoldMs = options.maxRateHoldMs ?? DEFAULT_MAX_RATE_HOLD_MS;
    this.#onHold = options.onHold;
    this.#keyId = options.keyId;
  }

  /** How much longer this process holds its calls, in ms (0: not held). */
  heldForMs(nowMs = Date.now()): number {
    return Math.max(0, this.#heldUntil - nowMs);
  }

  /**
   * Counts a call about to be made. Resolves when it may go (after waiting in this worker for
   * its turn, at most `maxHoldMs`) with the ticket to hand to `onRateLimited`; undefined when
   * every worker now holds and the job must go back to waiting. `claim` runs with the turn when
   * the call may go at once (src/queue/call-claim.ts); the ticket says what it did.
   */
  async beforeCall(claim?: TurnClaim): Promise<RateTicket | undefined> {
    for (let tries = 1; ; tries++) {
      const [admitted, waitMs, version, claimed = 0] = (await evalScript(
        this.#redis,
        claim?.script ?? ADMIT,
        2 + (claim?.keys.length ?? 0),
        this.#keys.rate,
        this.#keys.rateLog,
        ...(claim?.keys ?? []),
        this.#maxHoldMs,
        LOG_IDLE_MS,
        ...(claim?.args ?? []),
      )) as [number, number, number, number?];
      if (admitted === 1) {
        if (waitMs <= 0) return { version, claim: claimed };
        await sleep(waitMs);
        // A 429 meanwhile changed the model: this turn was given under the old one.
        if (Number((await this.#redis.hget(this.#keys.rate, 'version')) ?? 0) === version) {
          return { version, claim: claimed };
        }
        continue;
      }
      // A fixed window ends shortly: wait for it here rather than churn through the queue.
      if (waitMs <= this.#maxHoldMs && tries < MAX_ADMIT_TRIES) {
        await sleep(waitMs + 1);
        continue;
      }
      this.#holdHere(Math.min(waitMs, this.#maxRateHoldMs));
      return undefined;
    }
  }

  /**
   * A 429: learns what it says about the limit and holds every worker as long as the model
   * says. `waitMs` is the wait the service asked for, `message` its text, `ticket` what
   * `beforeCall` gave the call.
   */
  async onRateLimited(waitMs: number, message: string, ticket?: RateTicket): Promise<void> {
    const max = this.#maxRateHoldMs;
    const read = capSignal(readRateLimitSignal(message, waitMs), Date.now(), max);
    let askedMs = read.askedMs;
    const holdMs = await this.#change((model, nowMs) => {
      const lesson = capLesson(
        learn(model, {
          signal: read.signal,
          fresh: ticket === undefined || ticket.version === model.version,
          nowMs,
          observedPerSec: this.observedPerSec(Date.now()),
        }),
        nowMs,
        max,
      );
      if (lesson.askedMs !== undefined) askedMs = Math.max(askedMs ?? 0, lesson.askedMs);
      return lesson;
    });
    const cause: HoldCause = read.signal.limit === undefined ? 'retry-after' : 'learned-limit';
    await this.#holdKey(Math.min(holdMs ?? waitMs, max), cause, askedMs);
  }

  /** A success; now and then lets a paced rate grow back towards its ceiling. */
  onSuccess(nowMs = Date.now()): void {
    this.#successes.push(nowMs);
    if (this.#successes.length > 4096) this.#successes.splice(0, 2048);
    if (nowMs - this.#lastQuietCheck < 2000) return;
    this.#lastQuietCheck = nowMs;
    void this.#change(
      (model, now) => {
        if (model.regime !== 'paced') return { model, holdMs: 0 };
        const pace = onQuiet(model.pace, now);
        return { model: pace === model.pace ? model : { ...model, pace }, holdMs: 0 };
      },
      { bump: false },
    ).catch((error: unknown) =>
      this.#logger.warn({ err: error }, 'rate controller: increase failed'),
    );
  }

  observedPerSec(nowMs: number): number {
    const since = nowMs - OBSERVE_WINDOW_MS;
    let n = 0;
    for (let i = this.#successes.length - 1; i >= 0 && this.#successes[i]! >= since; i--) n++;
    return n / (OBSERVE_WINDOW_MS / 1000);
  }

  /** The model as Redis holds it now. */
  async model(): Promise<RateModel> {
    return (await this.#read()).model;
  }

  /**
   * Applies `rule` to the model in Redis (compare-and-set on its version, so workers learning
   * at the same time do not overwrite each other) and returns the hold it asks for; undefined
   * when others kept changing the model meanwhile.
   */
  async #change(
    rule: (model: RateModel, nowMs: number) => { model: RateModel; holdMs: number },
    options: { bump?: boolean } = {},
  ): Promise<number | undefined> {
    for (let tries = 0; tries < WRITE_TRIES; tries++) {
      const { model, nowMs } = await this.#read();
      const next = rule(model, nowMs);
      if (next.model === model) return next.holdMs;
      const after = options.bump === false ? { ...next.model, version: model.version } : next.model;
      const fields = fieldsOf(after, nowMs, next.holdMs);
      const written = await evalScript(
        this.#redis,
        WRITE,
        1,
        this.#keys.rate,
        model.version,
        MODEL_TTL_MS,
        ...fields,
      );
      if (written !== 1) continue;
      if (options.bump !== false) this.#logLesson(after, next.holdMs, nowMs);
      return next.holdMs;
    }
    return undefined;
  }

  async #read(): Promise<{ model: RateModel; nowMs: number }> {
    const [nowMs, flat] = (await evalScript(this.#redis, READ, 1, this.#keys.rate)) as [
      number,
      string[],
    ];
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    return { model: modelOf(fields), nowMs };
  }

  /**
   * Holds every call of the key for `ms` (on its model in Redis, with why, for every pool and for
   * `harvest status`) and this process's workers; `askedMs` is the longer hold that was capped.
   */
  async #holdKey(ms: number, cause: HoldCause, askedMs: number | undefined): Promise<void> {
    if (!(ms > 0)) return;
    if (askedMs !== undefined) {
      this.#logger.warn(
        { keyId: this.#keyId, askedMs, holdMs: ms },
        'rate limit hold capped (HARVEST_MAX_RATE_HOLD_MS)',
      );
    }
    this.#holdHere(ms);
    const ttlMs = Math.max(MODEL_TTL_MS, ms + LOG_IDLE_MS);
    const capped = askedMs === undefined ? 0 : 1;
    await evalScript(this.#redis, HOLD, 1, this.#keys.rate, Math.ceil(ms), cause, capped, ttlMs);
  }

  /** Holds this process's calls for `ms`: its search workers take no job meanwhile. */
  #holdHere(ms: number): void {
    if (!(ms > 0)) return;
    this.#heldUntil = Math.max(this.#heldUntil, Date.now() + ms);
    this.#onHold?.(ms);
  }

  #logLesson(model: RateModel, holdMs: number, nowMs: number): void {
    this.#logger.info(
      {
        keyId: this.#keyId,
        regime: model.regime,
        limit: model.limit,
        windowMs: model.windowMs,
        ratePerSec:
          model.regime === 'paced' && model.pace.ratePerSec !== null
            ? Number(model.pace.ratePerSec.toFixed(2))
            : undefined,
        windowEndsInMs: model.regime === 'fixed' ? model.windowEndsAt - nowMs : undefined,
        aligned: model.regime === 'fixed' ? model.aligned : undefined,
        guardMs: model.guardMs,
        holdMs,
      },
      'rate limit learned',
    );
  }
}

/** The hash fields of a model: what rate-model.ts keeps and what the admission script reads. */
export function fieldsOf(model: RateModel, nowMs: number, holdMs: number): (string | number)[] {
  const rate = model.regime === 'paced' ? model.pace.ratePerSec : null;
  const mode = model.regime === 'paced' && rate === null ? 'open' : MODES[model.regime];
  const fields: Record<string, string | number> = {
    regime: model.regime,
    limit: model.limit ?? '',
    windowMs: model.windowMs,
    end: model.windowEndsAt,
    slack: model.resetSlackMs,
    aligned: model.aligned ? 1 : 0,
    pace: JSON.stringify(model.pace),
    version: model.version,
    mode,
    guardMs: model.guardMs,
    // Long enough for a 429 to come back, were the window still closed.
    probeMs: Math.min(250, Math.round(model.windowMs / 100)),
    // Calls this long before a window's end may be counted by the service in the next one.
    carryMs: Math.min(model.windowMs, model.guardMs + model.resetSlackMs),
  };
  // A lesson from a 429 that holds the workers: the service's window is full.
  if (mode === 'window' && holdMs > 0) fields.count = model.limit ?? 0;
  if (mode === 'pace' && rate !== null) {
    fields.intervalMs = 1000 / rate;
    fields.tat = nowMs + holdMs;
  }
  return Object.entries(fields).flat();
}

function modelOf(fields: Record<string, string>): RateModel {
  const regime = (fields.regime as Regime | undefined) ?? 'open';
  if (!(regime in MODES)) return OPEN_MODEL;
  const windowMs = Number(fields.windowMs) || DEFAULT_WINDOW_MS;
  return {
    regime,
    limit: fields.limit ? Number(fields.limit) : null,
    windowMs,
    windowEndsAt: Number(fields.end) || 0,
    resetSlackMs: Number(fields.slack) || 0,
    aligned: fields.aligned === '1',
    guardMs: Number(fields.guardMs) || defaultGuardMs(windowMs),
    pace: fields.pace ? JSON.parse(fields.pace) : OPEN_MODEL.pace,
    version: Number(fields.version) || 0,
  };
}
