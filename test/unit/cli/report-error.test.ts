import { CommanderError } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BadRequestError,
  NetworkError,
  PaymentRequiredError,
  RateLimitedError,
  ServerError,
  UnauthorizedError,
} from '../../../src/api/errors.ts';
import { exitCodeOf, reportError } from '../../../src/cli/report-error.ts';
import { SettingsError } from '../../../src/config.ts';
import { HarvestError, UsageError } from '../../../src/errors.ts';

describe('exitCodeOf', () => {
  it('bad input 2, key, account and reachability 3, other failures their own code', () => {
    expect(exitCodeOf(new BadRequestError('400'))).toBe(2);
    expect(exitCodeOf(new UnauthorizedError('401'))).toBe(3);
    expect(exitCodeOf(new PaymentRequiredError('402'))).toBe(3);
    expect(exitCodeOf(new NetworkError('refused'))).toBe(3);
    expect(exitCodeOf(new ServerError('500'))).toBe(1);
    expect(exitCodeOf(new RateLimitedError('429'))).toBe(1);
    expect(exitCodeOf(new UsageError('flag'))).toBe(2);
    expect(exitCodeOf(new SettingsError('env'))).toBe(2);
    expect(exitCodeOf(new HarvestError('X', 'x', { exitCode: 4 }))).toBe(4);
  });
});

describe('reportError', () => {
  const out: string[] = [];
  const err: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    out.length = 0;
    err.length = 0;
  });
  function capture() {
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
    vi.spyOn(console, 'error').mockImplementation((text: unknown) => {
      err.push(String(text));
    });
  }

  it('one line on stderr, the key scrubbed; JSON on stdout only with --json', () => {
    capture();
    const error = new BadRequestError('HTTP 400: bad prompt from fc-secret-key', {
      status: 400,
      details: [{ path: ['prompt'], message: 'too long' }],
    });
    expect(reportError(error, 'fc-secret-key', false)).toBe(2);
    expect(err).toEqual(['harvest: HTTP 400: bad prompt from [redacted]']);
    expect(out).toEqual([]);
    expect(reportError(error, 'fc-secret-key', true)).toBe(2);
    expect(JSON.parse(out.join(''))).toEqual({
      ok: false,
      error: {
        name: 'BadRequestError',
        code: 'BAD_REQUEST',
        message: 'HTTP 400: bad prompt from [redacted]',
        status: 400,
        details: [{ path: ['prompt'], message: 'too long' }],
        exitCode: 2,
      },
    });
  });

  it('usage errors of commander become JSON too, help and version stay exit 0', () => {
    capture();
    const usage = new CommanderError(1, 'commander.missingMandatoryOptionValue', 'error: no --url');
    expect(reportError(usage, undefined, true)).toBe(2);
    expect(JSON.parse(out.join(''))).toEqual({
      ok: false,
      error: { code: 'USAGE', message: 'error: no --url', exitCode: 2 },
    });
    out.length = 0;
    expect(
      reportError(new CommanderError(0, 'commander.helpDisplayed', '(help)'), undefined, true),
    ).toBe(0);
    expect(out).toEqual([]);
  });
});
