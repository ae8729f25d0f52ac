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
    media: null,
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
