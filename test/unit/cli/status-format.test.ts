import { describe, expect, it } from 'vitest';
import { formatReport } from '../../../src/cli/commands/status.ts';
import type { NotificationRow, RunStatusReport } from '../../../src/store/index.ts';

function report(notification: NotificationRow | null): RunStatusReport {
  return {
    run: {
      id: 'r1',
      pipelineId: 1,
      pipelineName: 'daily',
      pipelineHash: 'h',
      status: 'completed',
      pausedReason: null,
      trigger: 'schedule',
      maxCredits: null,
      taskCount: 2,
      createdAt: 0,
      startedAt: 0,
      finishedAt: 1,
    },
    tasks: { queued: 0, running: 0, retrying: 0, done: 2, failed: 0, total: 2 },
    calls: { calls: 2, creditsUsed: 4, byOutcome: { ok: 2 }, unknownCostCalls: 0 },
    results: 10,
    newUrls: 3,
    creditsRemaining: null,
    creditAnomalies: { calls: 0, creditsUsed: 0, creditsCounted: 0 },
    media: null,
    pruned: null,
    notification,
    errors: { callsByCode: {}, failedTasksByCode: {}, recent: [] },
  } as RunStatusReport;
}

const row = (over: Partial<NotificationRow>): NotificationRow => ({
  runId: 'r1',
  url: 'https://hooks.example/h',
  state: 'pending',
  attempts: 0,
  lastStatus: null,
  lastError: null,
  createdAt: 0,
  updatedAt: 0,
  deliveredAt: null,
  ...over,
});

const noQueue = { paused: undefined, waiting: undefined };

describe('harvest status of one run', () => {
  it('says what harvest prune removed of a run, beside the rows left', () => {
    const pruned = {
      ...report(null),
      calls: { calls: 0, creditsUsed: 0, byOutcome: {}, unknownCostCalls: 0 },
      results: 0,
      pruned: { calls: 12, creditsUsed: 30, unknownCostCalls: 1, results: 40 },
    };
    expect(formatReport(pruned, noQueue)).toContain(
      '  pruned   12 calls (credits used 30 (+1 of unknown cost)) and 40 results removed by `harvest prune`; cost reports still count them',
    );
    expect(formatReport(report(null), noQueue)).not.toContain('pruned');
  });

  it('says how many results are new to the pipeline', () => {
    expect(formatReport(report(null), noQueue)).toContain(
      '  results  10, 3 new to the pipeline (URLs it saw first in this run)',
    );
    expect(formatReport(report(null), noQueue)).not.toContain('notify');
  });

  it("shows how a scheduled run's webhook delivery went", () => {
    const line = (n: NotificationRow) =>
      formatReport(report(n), noQueue)
        .split('\n')
        .find((l) => l.startsWith('  notify'));
    expect(line(row({ state: 'delivered', attempts: 1 }))).toBe(
      '  notify   delivered to https://hooks.example/h (1 attempt)',
    );
    expect(line(row({ attempts: 2, lastError: 'the receiver answered 503' }))).toBe(
      '  notify   https://hooks.example/h: retrying (2 attempts; last: the receiver answered 503)',
    );
    expect(line(row({ state: 'failed', attempts: 10, lastError: 'no answer' }))).toBe(
      '  notify   FAILED to https://hooks.example/h after 10 attempts: no answer',
    );
    expect(line(row({}))).toBe('  notify   https://hooks.example/h, once the run has finished');
  });

  it('says what waits for the queue window of a fed run, and who feeds it', () => {
    const running = report(null);
    running.run.status = 'running';
    const windowLine = (feed: { after: string; feeder: string | undefined; notFed?: number }) =>
      formatReport(running, { ...noQueue, feed })
        .split('\n')
        .find((l) => l.startsWith('  window'));
    expect(windowLine({ after: 'k9', feeder: 'vm-7-a1', notFed: 40 })).toBe(
      '  window   40 tasks wait in SQLite for the queue window; vm-7-a1 feeds them',
    );
    expect(windowLine({ after: 'k9', feeder: undefined, notFed: 40 })).toBe(
      '  window   40 tasks wait in SQLite for the queue window, and no store worker feeds them: start `harvest worker` on the database host',
    );
    // Everything fed already, or the run finished: nothing to say.
    expect(windowLine({ after: 'k9', feeder: undefined, notFed: 0 })).toBeUndefined();
    expect(
      formatReport(report(null), {
        ...noQueue,
        feed: { after: 'k', feeder: undefined, notFed: 3 },
      }),
    ).not.toContain('window');
  });
});

describe('harvest status of one run: what comes from outside, and what to do next', () => {
  it("escapes a receiver's and the API's control characters, one line each", () => {
    const r = report(row({ state: 'failed', attempts: 3, lastError: 'HTTP 500: \u001b[2J\rok\n' }));
    r.errors.recent = [
      {
        taskKey: 'k1',
        attempt: 1,
        outcome: 'SERVER_ERROR',
        status: 500,
        errorMessage: 'HTTP 500: \u001b]0;owned\u0007',
        startedAt: 0,
      },
    ];
    const text = formatReport(r, noQueue);
    expect(text).toContain('after 3 attempts: HTTP 500: \\x1b[2J\\rok\\n');
    expect(text).toContain('    SERVER_ERROR 500 on k1 (attempt 1): HTTP 500: \\x1b]0;owned\\x07');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed.
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  });

  it('names a 402 as out of credits and a 401 as the API key', () => {
    const running = report(null);
    running.run.status = 'running';
    const paused = (code: string) =>
      formatReport(running, { ...noQueue, paused: { code, reason: 'why' } })
        .split('\n')
        .find((l) => l.startsWith('  PAUSED'));
    expect(paused('PAYMENT_REQUIRED')).toBe(
      '  PAUSED   PAYMENT_REQUIRED (out of credits: every unfinished run waits): why',
    );
    expect(paused('UNAUTHORIZED')).toBe(
      '  PAUSED   UNAUTHORIZED (the API key: every unfinished run waits): why',
    );
  });

  it('a stopped or paused run is resumed; a running one waits for workers', () => {
    const run = (status: RunStatusReport['run']['status']) => {
      const r = report(null);
      r.run.status = status;
      r.tasks = { queued: 2, running: 0, retrying: 0, done: 0, failed: 0, total: 2 };
      return r;
    };
    const none = { ...noQueue, workers: { search: 0, store: 0 } };
    const live = { ...noQueue, workers: { search: 1, store: 1 } };
    expect(formatReport(run('running'), none)).toContain('start `harvest worker`');
    expect(formatReport(run('running'), none)).not.toContain('resume');
    for (const status of ['interrupted', 'cancelled'] as const) {
      expect(formatReport(run(status), none)).not.toContain('start `harvest worker`');
      expect(formatReport(run(status), none)).toContain(
        '  resume   harvest run --resume r1 --local (or --wait, once `harvest worker` runs)',
      );
      expect(formatReport(run(status), live)).toContain(
        '  resume   harvest run --resume r1 --wait',
      );
    }
    const held = { ...none, paused: { code: 'PAYMENT_REQUIRED', reason: 'why' } };
    expect(formatReport(run('running'), held)).not.toContain('start `harvest worker`');
    expect(formatReport(run('running'), held)).toContain('  resume   harvest run --resume r1');
  });
});
