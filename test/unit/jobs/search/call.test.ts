/**
 * The one API-call path (jobs/search/call.ts) on real parts: Redis under a fresh prefix (budget,
 * journal, rate controller), the sandbox on port 0 as the API. Records are kept as handed over.
 */
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import {
  type CallDeps,
  type CallRecords,
  type CallSpec,
  callApi,
} from '../../../../jobs/search/call.ts';
import { createApiClient } from '../../../../src/api/index.ts';
import type { CallEvent, StoreEvent } from '../../../../src/events/store.ts';
import { Budget } from '../../../../src/queue/budget.ts';
import { InflightJournal } from '../../../../src/queue/inflight.ts';
import { harvestKeys, QUEUES } from '../../../../src/queue/names.ts';
import { RateController } from '../../../../src/queue/rate/controller.ts';
import { type SandboxOptions, startSandbox } from '../../../../src/sandbox/index.ts';
import { useCleanup } from '../../../helpers/cleanup.ts';
import { capturedLogger } from '../../../helpers/logger.ts';
import { testRedis } from '../../../helpers/redis.ts';
import { waitFor } from '../../../helpers/wait.ts';

const defer = useCleanup();

const RECORD_CALL: CallRecords = { answered: (call) => [call], failed: (call) => [call] };

async function setup(sandboxOptions: SandboxOptions = {}) {
  const { prefix, redis } = testRedis(defer);
  const keys = harvestKeys(prefix);
  const queue = new Queue(QUEUES.search, { connection: redis, prefix });
  defer(() => queue.close());
  const sandbox = await startSandbox({ port: 0, ...sandboxOptions });
  defer(() => sandbox.close());
  const client = createApiClient({ baseUrl: sandbox.url, apiKey: 'fc-sandbox' });
  defer(() => client.close());
  const recorded: StoreEvent[] = [];
  const rate = new RateController(redis, keys, capturedLogger().logger, { maxHoldMs: 0 });
  const deps: CallDeps = {
    client,
    record: async (events) => {
      recorded.push(...events);
    },
    budget: new Budget(redis, keys),
    inflight: new InflightJournal(redis, keys),
    rate,
    workerId: 'worker-under-test',
    logger: capturedLogger().logger,
    random: () => 0,
  };
  const spec = (over: Partial<CallSpec> = {}): CallSpec => ({
    runId: 'run-1',
    taskKey: 't0',
    attempt: 1,
    request: { query: 'q t0', limit: 2 },
    budget: undefined,
    attemptsMade: 1,
    maxAttempts: 3,
    ...over,
  });
  const apiCalls = () =>
    Object.values(sandbox.ledger().teams.sandbox?.calls ?? {}).reduce((a, b) => a + b, 0);
  return { deps, redis, keys, queue, rate, recorded, spec, apiCalls };
}

describe('callApi', () => {
  it('a media re-issue (separate steps) is journaled and recorded with its purpose, then settled', async () => {
    const s = await setup({ latency: { minMs: 200, maxMs: 200 } });
    const calling = callApi(
      s.deps,
      s.spec({ purpose: 'media-reissue', budget: { credits: 5, maxCredits: 100 } }),
      RECORD_CALL,
    );
    const [entry] = await waitFor(
      'the call journaled while it is in flight',
      () => s.deps.inflight.ofWorker('worker-under-test'),
      { until: (calls) => calls.length > 0 },
    );
    expect(entry).toMatchObject({ runId: 'run-1', purpose: 'media-reissue' });
    // Its worst case is reserved meanwhile.
    expect(await s.redis.hget(s.keys.budget, 'run-1')).toBe('5');
    const outcome = await calling;
    expect(outcome.kind).toBe('answered');
    const [call] = s.recorded as CallEvent[];
    expect(call).toMatchObject({ type: 'call', outcome: 'ok', purpose: 'media-reissue' });
    expect(s.recorded).toHaveLength(1);
    // The reservation became what the call cost, and the call left the journal.
    expect(await s.deps.budget.settled('run-1', s.keys.inflight)).toBe(call?.creditsUsed);
    await waitFor('the journal to be empty', async () => (await s.deps.inflight.pending()) === 0);
  });

  it('a task search (one claim with its turn) reserves nothing and calls nothing over budget', async () => {
    const s = await setup();
    await s.deps.budget.raiseTo('run-1', 98);
    const deps = { ...s.deps, keys: s.keys };
    const outcome = await callApi(
      deps,
      s.spec({ budget: { credits: 5, maxCredits: 100 } }),
      RECORD_CALL,
    );
    expect(outcome).toEqual({ kind: 'over-budget' });
    expect(await s.deps.budget.settled('run-1', s.keys.inflight)).toBe(98);
    expect(await s.deps.inflight.pending()).toBe(0);
    expect(s.recorded).toEqual([]);
    expect(s.apiCalls()).toBe(0);
  });

  it('a 429 is recorded and learnt: every call then holds without calling', async () => {
    const s = await setup({ rateLimitPerMinute: 1 });
    expect((await callApi(s.deps, s.spec(), RECORD_CALL)).kind).toBe('answered');
    const limited = await callApi(s.deps, s.spec(), RECORD_CALL);
    expect(limited).toMatchObject({ kind: 'failed', decision: { kind: 'rate-limit' } });
    expect(s.recorded[1]).toMatchObject({ type: 'call', status: 429 });
    expect((await s.rate.model()).regime).not.toBe('open');
    expect(s.rate.heldForMs()).toBeGreaterThan(0);
    expect(await callApi(s.deps, s.spec(), RECORD_CALL)).toEqual({ kind: 'held' });
    expect(s.apiCalls()).toBe(2);
    expect(s.recorded).toHaveLength(2);
    expect(await s.deps.inflight.pending()).toBe(0);
  });

  it('pauses on a 402 only with `pause`', async () => {
    const s = await setup({ keys: [{ key: 'fc-sandbox', team: 'sandbox', credits: 0 }] });
    const paused: string[] = [];
    const outcome = await callApi(s.deps, s.spec(), RECORD_CALL);
    expect(outcome).toMatchObject({ kind: 'failed', decision: { kind: 'pause' } });
    expect(paused).toEqual([]);
    const pause = async (code: string) => void paused.push(code);
    await callApi({ ...s.deps, pause }, s.spec(), RECORD_CALL);
    expect(paused).toHaveLength(1);
    expect(s.recorded.map((e) => (e as CallEvent).status)).toEqual([402, 402]);
  });
});
