import { describe, expect, it } from 'vitest';
import { formatProgressLine, formatSummary } from '../../../src/cli/progress.ts';
import type { Progress } from '../../../src/run/wait.ts';

const progress = (over: Partial<Progress> = {}): Progress => ({
  runId: 'r1',
  status: 'running',
  total: 100,
  done: 40,
  failed: 2,
  retrying: 1,
  pending: 57,
  creditsUsed: 80,
  calls: 45,
  unknownCostCalls: 0,
  ratePerSec: 12.345,
  etaSec: 5,
  elapsedMs: 3000,
  ...over,
});

describe('formatProgressLine', () => {
  it('shows ended, done, failed, retrying, credits and the rate', () => {
    expect(formatProgressLine(progress())).toBe(
      'r1: 42/100 ended (done 40, failed 2, retrying 1), credits 80, 12.3/s',
    );
  });

  it('shows no rate until one is known, rather than 0/s', () => {
    expect(formatProgressLine(progress({ ratePerSec: null, etaSec: null }))).toMatch(/, -\/s$/);
  });

  it('says while the API is unreachable, with the next probe and the last error, escaped', () => {
    const since = Date.now() - 60_000;
    const apiOutage = {
      since,
      nextProbeAt: Date.now() + 30_000,
      lastError: 'connection refused\u001b[2J',
      probes: 3,
      lastFailureAt: since,
      answeredAt: 0,
    };
    const line = formatProgressLine(progress({ apiOutage }));
    expect(line).toMatch(
      /, 12\.3\/s; API unreachable since \d\d:\d\d, next probe in (29|30)s \(last error: connection refused/,
    );
    expect(line).not.toContain('\u001b');
  });
});

describe('formatSummary', () => {
  it('says how many results are new to the pipeline once the run has ended', () => {
    const ended = progress({ status: 'completed', done: 100, failed: 0, newUrls: 37 });
    expect(formatSummary(ended, '/data/harvest.db')).toContain(
      '  new     37 results new to the pipeline',
    );
    expect(formatSummary(progress(), '/data/harvest.db')).not.toContain('new to the pipeline');
  });

  it("shows a pause's reason with its control characters escaped", () => {
    const paused = progress({
      status: 'running',
      paused: { code: 'PAYMENT_REQUIRED', reason: 'HTTP 402: \u001b[2Jno credits\r\nforged' },
    });
    expect(formatSummary(paused, '/d.db')).toContain(
      '  PAUSED  PAYMENT_REQUIRED: HTTP 402: \\x1b[2Jno credits\\r\\nforged',
    );
    expect(formatSummary(paused, '/d.db')).not.toContain('\u001b');
  });

  it('shows calls of unknown cost beside the credits, never as zero credits alone', () => {
    const summary = formatSummary(progress({ creditsUsed: 0, unknownCostCalls: 12 }), '/d.db');
    expect(summary).toContain('  calls   45, credits used 0 (+12 calls of unknown cost)');
    expect(formatSummary(progress(), '/d.db')).toContain('  calls   45, credits used 80\n');
  });
});
