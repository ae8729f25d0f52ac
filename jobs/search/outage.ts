/**
 * The search role's side of the API circuit (src/queue/circuit.ts): what a failed call means
 * for its task, the pause of the search queue while the API is unreachable, and the probe that
 * ends it.
 *
 * | a call                                   | its job                                           |
 * |------------------------------------------|---------------------------------------------------|
 * | answered (any status but 5xx and 408)    | as before; the circuit hears the API is up        |
 * | failed, the circuit opens or is open     | back to the (paused) queue, attempt unspent       |
 * | failed, the task's own trouble           | as before: retried while attempts remain          |
 *
 * While the circuit is open, one pool at a time probes the API with a free call (the active
 * crawls listing), at capped exponential intervals; any HTTP answer closes the circuit and
 * resumes the queue. A pool that starts while the circuit is open probes at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Decision } from '../../src/api/backoff.ts';
import { ApiError, NetworkError } from '../../src/api/errors.ts';
import type { ApiClient } from '../../src/api/index.ts';
import {
  failureClass,
  isHealthyStatus,
  type ProbeBackoff,
  probeDelayMs,
} from '../../src/api/outage.ts';
import type { Logger } from '../../src/log.ts';
import { type ApiCircuit, type CircuitState, OUTAGE_CODE } from '../../src/queue/circuit.ts';
import type { HarvestKeys } from '../../src/queue/names.ts';
import { pauseQueue, readPause, resumeQueue } from '../../src/queue/pause.ts';

/** What the one API-call path (call.ts) asks of the circuit. */
export interface CallCircuit {
  /** A call got an answer with this HTTP status. */
  answered(status: number): void;
  /** What to do after a failed call: `decision`, or a pause when the API is unreachable. */
  judge(
    error: unknown,
    call: { taskKey: string; callId: string },
    decision: Decision,
  ): Promise<Decision>;
}

/** Longest wait for a probe's answer, in ms. */
const PROBE_TIMEOUT_MS = 10_000;
/** How long a connection lost without an answer waits to see whether the API went away, in ms. */
const SETTLE_MS = 250;
/** How long one pool's right to probe lasts, in ms: a probe's longest wait and some. */
const PROBE_LEASE_MS = PROBE_TIMEOUT_MS + 5000;

type PauseKeys = Pick<HarvestKeys, 'pausedReason'>;

/**
 * Pauses the search queue for an outage, unless it is paused for the API key already (that
 * pause says more, and a probe's answer must not lift it).
 */
export async function pauseForOutage(
  queue: Queue,
  redis: Redis,
  keys: PauseKeys,
  reason: string,
): Promise<void> {
  const held = await readPause(redis, keys.pausedReason);
  if (held !== undefined && held.code !== OUTAGE_CODE) return;
  await pauseQueue(queue, redis, keys.pausedReason, { code: OUTAGE_CODE, reason }, 'first');
}

/** Resumes the search queue if an outage paused it. */
export async function resumeAfterOutage(
  queue: Queue,
  redis: Redis,
  keys: PauseKeys,
): Promise<void> {
  await resumeQueue(queue, redis, keys.pausedReason, OUTAGE_CODE);
}

export interface OutageWatchDeps {
  circuit: ApiCircuit;
  client: ApiClient;
  searchQueue: Queue;
  redis: Redis;
  keys: PauseKeys;
  workerId: string;
  log: Logger;
  probe: ProbeBackoff;
  random?: () => number;
}

/** One pool's judge of failed calls and prober of the API while the circuit is open. */
export class OutageWatch implements CallCircuit {
  readonly #d: OutageWatchDeps;
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;
  /**
   * False until the circuit was first seen closed or probed: a pool that starts during an
   * outage probes at once.
   */
  #probedOnce = false;
  #stopped = false;
  readonly #stopping = new AbortController();

  constructor(deps: OutageWatchDeps) {
    this.#d = deps;
  }

  answered(status: number): void {
    this.#d.circuit.answered(isHealthyStatus(status));
  }

  async judge(
    error: unknown,
    call: { taskKey: string; callId: string },
    decision: Decision,
  ): Promise<Decision> {
    if (error instanceof ApiError && error.status !== undefined) this.answered(error.status);
    const failure = failureClass(error);
    // 401 and 402 pause the queue for the key; a 4xx or a 429 says the API is up.
    if (failure === 'other' || decision.kind === 'pause' || decision.kind === 'rate-limit') {
      return decision;
    }
    const message = error instanceof Error ? error.message : String(error);
    try {
      const firstProbeInMs = probeDelayMs(0, this.#d.probe, this.#d.random ?? Math.random);
      const verdict = await this.#d.circuit.judge(failure, call, message, firstProbeInMs);
      if (verdict === 'task' && !(await this.#openedMeanwhile(error))) return decision;
      if (verdict === 'opened') this.#d.log.warn({ err: error }, 'API unreachable: searches wait');
      return {
        kind: 'pause',
        code: OUTAGE_CODE,
        reason: `the API is unreachable (${message}); searches wait and go on once it answers a probe`,
      };
    } catch (redisError) {
      this.#d.log.warn({ err: redisError }, 'could not judge a failed call against the circuit');
      return decision;
    }
  }

  /**
   * A connection lost without an answer may be the first sign of an outage (a server going
   * away closes its connections, then refuses new ones): such a failure waits a moment, and
   * is part of the outage if the circuit opened meanwhile.
   */
  async #openedMeanwhile(error: unknown): Promise<boolean> {
    if (!(error instanceof NetworkError) || error.status !== undefined) return false;
    await sleep(SETTLE_MS);
    return (await this.#d.circuit.read()) !== undefined;
  }

  /** Looks at the circuit every `checkMs`, probing when it is open and a probe is due. */
  start(checkMs: number): void {
    const tick = () => {
      if (this.#stopped) return;
      this.#checking = this.#check()
        .catch((error: unknown) => this.#d.log.warn({ err: error }, 'circuit check failed'))
        .finally(() => {
          if (!this.#stopped) this.#timer = setTimeout(tick, checkMs);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#stopping.abort();
    await this.#checking;
  }

  async #check(): Promise<void> {
    const state = await this.#d.circuit.read();
    // A pause that came after the circuit closed (a call's, recorded after the probe's answer)
    // is lifted here.
    if (!state) {
      // Found closed at the start: later outages wait for their first probe's time.
      this.#probedOnce = true;
      return resumeAfterOutage(this.#d.searchQueue, this.#d.redis, this.#d.keys);
    }
    if (this.#probedOnce && Date.now() < state.nextProbeAt) return;
    if (!(await this.#d.circuit.takeProbeLease(this.#d.workerId, PROBE_LEASE_MS))) return;
    this.#probedOnce = true;
    try {
      await this.#probe(state);
    } finally {
      await this.#d.circuit.releaseProbeLease();
    }
  }

  async #probe(state: CircuitState): Promise<void> {
    const { circuit, log } = this.#d;
    const failure = await this.#d.client
      .activeCrawls({ version: 'v2', timeoutMs: PROBE_TIMEOUT_MS, signal: this.#stopping.signal })
      .then(
        () => undefined,
        (error: unknown) =>
          // Any HTTP answer (a 401, a 500) says the host is reachable again.
          error instanceof ApiError && error.status !== undefined ? undefined : error,
      );
    if (this.#stopping.signal.aborted) return;
    if (failure === undefined) {
      if (await circuit.close()) {
        await resumeAfterOutage(this.#d.searchQueue, this.#d.redis, this.#d.keys);
        log.warn({ downMs: Date.now() - state.since }, 'the API answers again: searches go on');
      }
      return;
    }
    const delayMs = probeDelayMs(state.probes + 1, this.#d.probe, this.#d.random ?? Math.random);
    const message = failure instanceof Error ? failure.message : String(failure);
    await circuit.probeFailed(message, Date.now() + delayMs);
    log.info({ err: failure, nextProbeInMs: delayMs }, 'API probe failed');
  }
}
