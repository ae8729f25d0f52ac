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
  it('an API 400 is bad input (2); any other API failure is the environment (3)', () => {
    expect(exitCodeOf(new BadRequestError('400'))).toBe(2);
    expect(exitCodeOf(new UnauthorizedError('401'))).toBe(3);
    expect(exitCodeOf(new PaymentRequiredError('402'))).toBe(3);
    expect(exitCodeOf(new NetworkError('refused'))).toBe(3);
    // Once retries are spent, the service failing is the environment too, not a bug (1).
    expect(exitCodeOf(new ServerError('500'))).toBe(3);
    expect(exitCodeOf(new RateLimitedError('429'))).toBe(3);
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
    expect(reportError(error, ['fc-secret-key'], false)).toBe(2);
    expect(err).toEqual(['harvest: HTTP 400: bad prompt from [redacted]']);
    expect(out).toEqual([]);
    expect(reportError(error, ['fc-secret-key'], true)).toBe(2);
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

  it("escapes the service's control characters on stderr; --json keeps the message exact", () => {
    capture();
    const message = 'HTTP 402: \u001b]0;owned\u0007\u001b[2J\rcredits\nforged';
    expect(reportError(new PaymentRequiredError(message, { status: 402 }), [], true)).toBe(3);
    expect(err).toEqual(['harvest: HTTP 402: \\x1b]0;owned\\x07\\x1b[2J\\rcredits\\nforged']);
    expect(JSON.parse(out.join('')).error.message).toBe(message);
  });

  it('usage errors of commander become JSON too, help and version stay exit 0', () => {
    capture();
    const usage = new CommanderError(1, 'commander.missingMandatoryOptionValue', 'error: no --url');
    expect(reportError(usage, [], true)).toBe(2);
    expect(JSON.parse(out.join(''))).toEqual({
      ok: false,
      error: { code: 'USAGE', message: 'error: no --url', exitCode: 2 },
    });
    out.length = 0;
    expect(reportError(new CommanderError(0, 'commander.helpDisplayed', '(help)'), [], true)).toBe(
      0,
    );
    expect(out).toEqual([]);
  });
});

describe('secretsOf and maskUrl', () => {
  it('finds the API key, the Redis password (decoded and as written) and the other secrets', async () => {
    const { secretsOf } = await import('../../../src/config.ts');
    expect(
      secretsOf({
        HARVEST_API_KEY: 'fc-key-1234',
        REDIS_URL: 'redis://user:p%40ss-word@redis.internal:6379/0',
        HARVEST_NOTIFY_SECRET: 'n'.repeat(16),
      }),
    ).toEqual(['fc-key-1234', 'n'.repeat(16), 'p@ss-word', 'p%40ss-word']);
    expect(secretsOf({ REDIS_URL: 'redis://127.0.0.1:6379' })).toEqual([]);
  });

  it('shows a Redis address without its password', async () => {
    const { maskUrl } = await import('../../../src/config.ts');
    expect(maskUrl('redis://:hunter22@10.0.0.5:6379')).toBe('redis://:***@10.0.0.5:6379');
    expect(maskUrl('rediss://default:s3cret@cache.example:6380/2')).toBe(
      'rediss://default:***@cache.example:6380/2',
    );
    expect(maskUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(maskUrl('not a url://user:pw@x')).toBe('not a url://***@x');
  });

  it('an unexpected error keeps its stack, with the Redis password scrubbed', () => {
    const err: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((text: unknown) => {
      err.push(String(text));
    });
    const code = reportError(
      new Error('connect to redis://:hunter22@x failed'),
      ['hunter22'],
      false,
    );
    vi.restoreAllMocks();
    expect(code).toBe(1);
    expect(err.join('\n')).not.toContain('hunter22');
    expect(err.join('\n')).toContain('redis://:[redacted]@x');
  });
});
