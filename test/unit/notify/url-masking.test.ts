/**
 * Webhook URLs as harvest prints them: the query values and credentials that carry a
 * receiver's secret are masked in `status` and `schedule ls` (and in logs: notify-address).
 */
import { describe, expect, it } from 'vitest';
import { describeSchedule } from '../../../src/cli/actions/schedule.ts';
import { formatReport } from '../../../src/cli/commands/status.ts';
import { maskUrlSecrets } from '../../../src/log.ts';
import type { RunStatusReport } from '../../../src/store/index.ts';

const HOOK = 'https://ops:pa55word@hooks.example/h?token=tok-s3cr3t&channel=alerts';
const MASKED = 'https://***:***@hooks.example/h?token=***&channel=***';

describe('maskUrlSecrets', () => {
  it('masks user, password, every query value and the fragment; keeps the rest', () => {
    expect(maskUrlSecrets(HOOK)).toBe(MASKED);
    expect(maskUrlSecrets('https://hooks.example:8443/a/b?sig=x#frag')).toBe(
      'https://hooks.example:8443/a/b?sig=***#***',
    );
    expect(maskUrlSecrets('https://:only-password@h.example/')).toBe('https://:***@h.example/');
    // A bare query part may be the token itself.
    expect(maskUrlSecrets('https://h.example/hook?abcdef0123456789')).toBe(
      'https://h.example/hook?***',
    );
  });

  it('returns a URL with nothing to mask as given', () => {
    for (const url of ['https://hooks.example/h', 'http://[::1]:8080/x', 'https://h.example']) {
      expect(maskUrlSecrets(url)).toBe(url);
    }
  });

  it('prints nothing after the scheme of what is not a URL', () => {
    expect(maskUrlSecrets('//user:pw@host/x?token=t')).toBe('//***@host/x?***');
  });
});

describe('where webhook URLs are printed', () => {
  it('harvest status RUN masks them', () => {
    const report = {
      run: { id: 'r1', pipelineName: 'daily', status: 'completed', maxCredits: null },
      tasks: { queued: 0, running: 0, retrying: 0, done: 1, failed: 0, total: 1 },
      calls: { calls: 1, creditsUsed: 2, byOutcome: {}, unknownCostCalls: 0 },
      results: 1,
      newUrls: 1,
      media: null,
      notification: {
        runId: 'r1',
        url: HOOK,
        state: 'failed',
        attempts: 10,
        lastStatus: 500,
        lastError: 'the receiver answered 500',
        createdAt: 0,
        updatedAt: 0,
        deliveredAt: null,
      },
      errors: { callsByCode: {}, failedTasksByCode: {}, recent: [] },
      creditAnomalies: { calls: 0, creditsUsed: 0, creditsCounted: 0 },
    } as unknown as RunStatusReport;
    const text = formatReport(report, { paused: undefined, waiting: undefined });
    expect(text).toContain(
      `  notify   FAILED to ${MASKED} after 10 attempts: the receiver answered 500`,
    );
    expect(text).not.toContain('tok-s3cr3t');
    expect(text).not.toContain('pa55word');
  });

  it('harvest schedule ls masks them, as text and as JSON', () => {
    const yamlText = `name: weekly\nschedule:\n  cron: "0 6 * * 1"\n  notify: ${HOOK}\n`;
    const d = describeSchedule(
      {
        name: 'weekly',
        cron: '0 6 * * 1',
        tz: 'UTC',
        hash: 'a'.repeat(64),
        next: null,
        yamlText,
        file: undefined,
        missed: [],
      },
      null,
      1,
      Date.UTC(2026, 10, 23),
    );
    expect(d.lines).toContain(`  notify ${MASKED}`);
    expect(d.notify).toBe(MASKED);
  });
});
