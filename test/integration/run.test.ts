/**
 * Whole runs on real parts: sandbox on port 0, Redis under a fresh prefix, a temp SQLite file,
 * the worker pool in this process.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/actions/run.ts';
import { resumeRun } from '../../src/run/resume.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { unfinishedJobs, waitForDrained } from '../helpers/queues.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const PIPELINE = `
name: it-basic
defaults:
  limit: 5
searches:
  - id: plain
    query: "vector databases"
  - id: news
    query: "open source llm"
    sources: [web, news]
  - id: scraped
    query: "sqlite wal mode"
    scrapeOptions:
      formats: [markdown, links]
  - matrix:
      topic: [redis, postgres, kafka, nats]
    query: "{topic} benchmarks"
`;

function sumStoredCredits(harness: Harness, runId: string): number {
  return harness.runtime.store.calls.summary(runId).creditsUsed;
}

function ledgerCredits(harness: Harness, team = 'sandbox'): number {
  return harness.sandbox.ledger().teams[team]?.creditsCharged ?? 0;
}

/** The request of every call of the run answered 200 whose body could not be read. */
function requestsOfUnreadable200s(harness: Harness, runId: string): string[] {
  const db = new Database(harness.settings.dbPath, { readonly: true });
  try {
    return db
      .prepare(
        `SELECT t.request_json FROM calls c JOIN tasks t ON t.run_id = c.run_id AND t.task_key = c.task_key
         WHERE c.run_id = ? AND c.status = 200 AND c.credits_used IS NULL`,
      )
      .pluck()
      .all(runId) as string[];
  } finally {
    db.close();
  }
}

/** `creditsUsed` of the sandbox's answer to a search body. */
async function creditsOf(harness: Harness, body: string): Promise<number> {
  const res = await fetch(`${harness.sandbox.url}/v2/search`, {
    method: 'POST',
    headers: { authorization: 'Bearer fc-sandbox', 'content-type': 'application/json' },
    body,
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { creditsUsed: number }).creditsUsed;
}

function ledgerAnswers(harness: Harness, team = 'sandbox'): number {
  const calls = harness.sandbox.ledger().teams[team]?.calls ?? {};
  return Object.values(calls).reduce((a, b) => a + b, 0);
}

describe('harvest run', () => {
  it('stores every result, and the credits stored equal what the service billed', async () => {
    h = await startHarness();
    const file = h.writePipeline('basic', PIPELINE);
    await h.startPool();
    const started = await startRun(h.runtime, file, { logger: h.logger });
    expect(started.taskCount).toBe(7);
    const final = await waitForRun(h.runtime, started.runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    expect(final.done).toBe(7);

    const store = h.runtime.store;
    const rows = [...store.iterateResults(started.runId)];
    expect(rows.length).toBeGreaterThan(0);
    expect(store.results.count(started.runId)).toBe(rows.length);
    expect(sumStoredCredits(h, started.runId)).toBe(ledgerCredits(h));
    expect(sumStoredCredits(h, started.runId)).toBeGreaterThan(0);
    // Scraped results carry their content.
    const scraped = rows.filter((r) => r.markdown);
    expect(scraped.length).toBeGreaterThan(0);
  });

  it('resuming a finished run calls nothing again and leaves it finished', async () => {
    h = await startHarness();
    const file = h.writePipeline('basic', PIPELINE);
    await h.startPool();
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitForRun(h.runtime, runId, { pollMs: 50 });
    const answered = ledgerAnswers(h);
    const { requeued } = await resumeRun(h.runtime, runId, { logger: h.logger });
    expect(requeued).toBe(0);
    expect(h.runtime.store.runs.get(runId)?.status).toBe('completed');
    const again = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(again).toMatchObject({ status: 'completed', done: 7 });
    expect(ledgerAnswers(h)).toBe(answered);
  });

  it("the run's own rate limit travels with its jobs, again on resume; a run whose plan was never recorded is refused", async () => {
    h = await startHarness();
    const file = h.writePipeline('capped', `${PIPELINE}run:\n  rateLimitPerMinute: 60\n`);
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const limits = async () =>
      (await h!.runtime.searchQueue.getJobs(['waiting', 'prioritized', 'delayed'])).map(
        (job) => job.data.rateLimitPerMinute,
      );
    expect(new Set(await limits())).toEqual(new Set([60]));
    // It is the run's alone: the API key's learned model does not hold it.
    expect(await h.runtime.redis.exists(h.runtime.keys.rate)).toBe(0);
    // Jobs lost with Redis come back from SQLite with it.
    await h.runtime.searchQueue.obliterate({ force: true });
    await resumeRun(h.runtime, runId, { logger: h.logger });
    expect(new Set(await limits())).toEqual(new Set([60]));

    // A run that failed while planning (no task recorded) has nothing to continue.
    const store = h.runtime.store;
    const pipelineId = store.runs.get(runId)!.pipelineId;
    const unplanned = 'run-unplanned';
    store.runs.create({
      id: unplanned,
      pipelineId,
      trigger: 'manual',
      maxCredits: null,
      taskCount: 0,
    });
    store.runs.setStatus(unplanned, 'failed');
    await expect(resumeRun(h.runtime, unplanned, { logger: h.logger })).rejects.toMatchObject({
      code: 'RUN_NOT_PLANNED',
    });
    expect(store.runs.get(unplanned)?.status).toBe('failed');
  });

  it('resuming commits the results waiting in the store queue first: none of their tasks is searched again', async () => {
    h = await startHarness();
    const file = h.writePipeline('basic', PIPELINE);
    // Search workers without the database, and no store role: results wait in the store queue.
    await h.startPool({ roles: ['search'] });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const { searchQueue, storeQueue, store } = h.runtime;
    // A search job completes once its results are in the store queue.
    await waitForDrained(searchQueue);
    expect(await unfinishedJobs(storeQueue)).toBeGreaterThan(0);
    expect(store.tasks.counts(runId).done).toBe(0);
    const answered = ledgerAnswers(h);
    expect(answered).toBeGreaterThanOrEqual(7);

    const { requeued } = await resumeRun(h.runtime, runId, { logger: h.logger });
    expect(requeued).toBe(0);
    expect(store.runs.get(runId)?.status).toBe('completed');
    expect(sumStoredCredits(h, runId)).toBe(ledgerCredits(h));
    // A store role that commits the same jobs afterwards changes nothing.
    await h.startPool({ roles: ['store'] });
    await waitForDrained(storeQueue);
    expect(await waitForRun(h.runtime, runId, { pollMs: 50 })).toMatchObject({
      status: 'completed',
      done: 7,
    });
    expect(sumStoredCredits(h, runId)).toBe(ledgerCredits(h));
    expect(store.calls.totals(runId).calls).toBe(answered);
    expect(ledgerAnswers(h)).toBe(answered);
  });

  it('retries 408, 500, malformed bodies and dropped connections, recording every call', async () => {
    h = await startHarness({
      sandbox: { faults: { timeout408: 0.15, error500: 0.15, malformed: 0.1, drop: 0.1 }, seed: 7 },
    });
    const file = h.writePipeline(
      'faulty',
      `name: it-faulty\nrun:\n  maxAttempts: 12\nsearches:\n  - matrix:\n      n: [${Array.from({ length: 30 }, (_, i) => i).join(', ')}]\n    query: "fault test {n}"\n    limit: 3\n`,
    );
    await h.startPool({ concurrency: 6 });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    // Backoff starts at 1 s and grows; keep this test's waits short by checking the outcome only.
    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final.status).toBe('completed');
    const summary = h.runtime.store.calls.summary(runId);
    expect(summary.byOutcome.ok).toBe(30);
    const failures = summary.calls - 30;
    expect(failures).toBeGreaterThan(0);
    for (const code of Object.keys(summary.byOutcome)) {
      expect(['ok', 'TIMEOUT', 'SERVER_ERROR', 'BAD_RESPONSE', 'NETWORK']).toContain(code);
    }
    // Malformed 200s are billed by the service and recorded as calls of unknown cost.
    expect(summary.calls).toBe(ledgerAnswers(h) + h.sandbox.ledger().teams.sandbox!.dropped);
    const billed = ledgerCredits(h);
    const unknownCost = requestsOfUnreadable200s(h, runId);
    expect(unknownCost.length).toBeGreaterThan(0);
    expect(unknownCost.length).toBeLessThanOrEqual(summary.unknownCostCalls);
    // What those calls cost: the sandbox answers a request the same way every time, so asking
    // again without faults tells each one's creditsUsed.
    h.sandbox.control.setFaults({});
    let unread = 0;
    for (const body of unknownCost) unread += await creditsOf(h, body);
    expect(summary.creditsUsed).toBeGreaterThan(0);
    expect(summary.creditsUsed + unread).toBe(billed);
  });
});

describe('harvest run: errors that stop a task or the queue', () => {
  it('fails a 403 without retrying and records the service message', async () => {
    h = await startHarness();
    const file = h.writePipeline(
      'forbidden',
      `name: it-forbidden\nsearches:\n  - query: "allowed"\n  - query: "needs the feature"\n    threatProtection:\n      mode: normal\n`,
    );
    await h.startPool();
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    expect(exitCodeFor(final)).toBe(1);
    expect(final.done).toBe(1);
    expect(final.failed).toBe(1);
    const report = h.runtime.store.runStatus(runId)!;
    expect(report.errors.callsByCode).toEqual({ FORBIDDEN: 1 });
    expect(report.errors.recent[0]?.errorMessage).toContain(
      'Threat protection is an enterprise feature',
    );
    expect(report.calls.calls).toBe(2);
  });

  it('fails a 400 without retrying and records the service message with its details', async () => {
    // The reference allows changeTracking in search; the hosted service (and the sandbox with
    // hostedRules) answers 400. The pipeline validates, with a warning.
    h = await startHarness({ sandbox: { hostedRules: true } });
    const file = h.writePipeline(
      'refused',
      `name: it-refused\nsearches:\n  - query: "fine"\n  - query: "tracked"\n    scrapeOptions:\n      formats: [markdown, {type: changeTracking}]\n`,
    );
    await h.startPool();
    const { runId, warnings } = await startRun(h.runtime, file, { logger: h.logger });
    expect(warnings.join('\n')).toContain('changeTracking');
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    expect(exitCodeFor(final)).toBe(1);
    expect([final.done, final.failed]).toEqual([1, 1]);
    const report = h.runtime.store.runStatus(runId)!;
    expect(report.calls.calls).toBe(2);
    expect(report.errors.callsByCode).toEqual({ BAD_REQUEST: 1 });
    expect(report.errors.failedTasksByCode).toEqual({ BAD_REQUEST: 1 });
    const message = report.errors.recent[0]?.errorMessage ?? '';
    expect(message).toContain('HTTP 400: Invalid request body');
    expect(message).toContain('scrapeOptions.formats.1');
    const db = new Database(h.settings.dbPath, { readonly: true });
    try {
      const call = db
        .prepare("SELECT status, attempt FROM calls WHERE run_id = ? AND outcome = 'BAD_REQUEST'")
        .get(runId);
      expect(call).toEqual({ status: 400, attempt: 1 });
    } finally {
      db.close();
    }
  });

  it('holds the budget: tasks that could pass maxCredits fail as BUDGET_EXCEEDED, never silently', async () => {
    h = await startHarness();
    const file = h.writePipeline(
      'budget',
      `name: it-budget\nbudget:\n  maxCredits: 7\nsearches:\n  - matrix:\n      n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n    query: "budget test {n}"\n    limit: 5\n`,
    );
    await h.startPool({ concurrency: 3 });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.done + final.failed).toBe(10);
    expect(final.failed).toBeGreaterThan(0);
    const report = h.runtime.store.runStatus(runId)!;
    expect(report.errors.failedTasksByCode).toEqual({ BUDGET_EXCEEDED: final.failed });
    expect(final.done).toBeGreaterThan(0);
    expect(report.calls.creditsUsed).toBeGreaterThan(0);
    expect(report.calls.creditsUsed).toBe(ledgerCredits(h));
    expect(ledgerCredits(h)).toBeLessThanOrEqual(7);
  });

  it('pauses the queue on 402 with a reason, and --resume completes the run', async () => {
    h = await startHarness({
      sandbox: { keys: [{ key: 'fc-sandbox', team: 'sandbox', credits: 6 }] },
    });
    const file = h.writePipeline(
      'credits',
      `name: it-credits\nsearches:\n  - matrix:\n      n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n    query: "credit test {n}"\n    limit: 5\n`,
    );
    await h.startPool({ concurrency: 1 });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const paused = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(paused.paused?.code).toBe('PAYMENT_REQUIRED');
    expect(paused.paused?.reason).toContain('harvest run --resume');
    expect(paused.done).toBeLessThan(10);
    expect(paused.failed).toBe(0);

    h.sandbox.control.setCredits('fc-sandbox', 10_000);
    await resumeRun(h.runtime, runId, { logger: h.logger });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    expect(final.done).toBe(10);
    const summary = h.runtime.store.calls.summary(runId);
    expect(summary.byOutcome.PAYMENT_REQUIRED).toBeGreaterThanOrEqual(1);
    expect(summary.creditsUsed).toBeGreaterThan(0);
    expect(summary.creditsUsed).toBe(ledgerCredits(h));
  });

  it('pauses on 401 and never lets the API key reach logs, the database or error output', async () => {
    const secret = 'fc-secret-7f3a9c1e55d04b2a';
    h = await startHarness({
      apiKey: 'fc-wrong-key-000000',
      sandbox: {
        keys: [{ key: secret, team: 'sandbox', credits: 1_000_000 }],
        faults: { error500: 0.2 },
      },
    });
    const file = h.writePipeline(
      'auth',
      `name: it-auth\nsearches:\n  - query: "one"\n  - query: "two"\n`,
    );
    let pool = await h.startPool();
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const paused = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(paused.paused?.code).toBe('UNAUTHORIZED');
    expect(paused.paused?.reason).toContain('HARVEST_API_KEY');
    await pool.close();

    pool = await h.startPool({ apiKey: secret });
    await resumeRun(h.runtime, runId, { logger: h.logger });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    await pool.close();

    const { readFileSync, readdirSync } = await import('node:fs');
    const dbText = readdirSync(h.dir)
      .filter((f) => f.startsWith('harvest.db'))
      .map((f) => readFileSync(`${h!.dir}/${f}`).toString('latin1'))
      .join('');
    expect(dbText.length).toBeGreaterThan(0);
    expect(dbText).not.toContain(secret);
    expect(dbText).not.toContain('fc-wrong-key-000000');
    expect(h.logs()).not.toContain(secret);
    expect(h.logs()).not.toContain('fc-wrong-key-000000');
  });
});

describe('harvest run: rate limits', () => {
  it('a 429 storm spends no attempts, and the run completes', async () => {
    // 4 requests per (clock-aligned) 2 s window for 12 searches, 6 at a time: the rest meet
    // 429 and wait for the next window, which the message names ("retry after Ns").
    h = await startHarness({ sandbox: { rateLimitPerMinute: 4, rateLimitWindowMs: 2000 } });
    const file = h.writePipeline(
      'storm',
      `name: it-storm\nrun:\n  maxAttempts: 2\nsearches:\n  - matrix:\n      n: [${Array.from({ length: 12 }, (_, i) => i).join(', ')}]\n    query: "storm {n}"\n    limit: 2\n`,
    );
    await h.startPool({ concurrency: 6 });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final.status).toBe('completed');
    expect(final.done).toBe(12);
    const summary = h.runtime.store.calls.summary(runId);
    expect(summary.byOutcome.RATE_LIMITED).toBeGreaterThan(0);
    expect(summary.byOutcome.ok).toBe(12);
    // With maxAttempts 2, a 429 that spent an attempt would show as attempt 2 (or a failure).
    const db = new Database(h.settings.dbPath, { readonly: true });
    try {
      const attempts = db
        .prepare('SELECT DISTINCT attempt FROM calls WHERE run_id = ?')
        .pluck()
        .all(runId);
      expect(attempts).toEqual([1]);
    } finally {
      db.close();
    }
  });
});
