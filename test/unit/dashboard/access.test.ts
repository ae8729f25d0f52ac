import { describe, expect, it } from 'vitest';
import {
  dashboardCredentials,
  fromThisHost,
  isLoopbackHost,
} from '../../../src/dashboard/access.ts';
import { UsageError } from '../../../src/errors.ts';

describe('isLoopbackHost', () => {
  it.each(['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]', '::ffff:127.0.0.1'])(
    '%s is loopback',
    (host) => {
      expect(isLoopbackHost(host)).toBe(true);
    },
  );

  it.each([
    '0.0.0.0',
    '::',
    '10.0.0.5',
    '192.168.1.10',
    '128.0.0.1',
    '::ffff:10.0.0.1',
    'fe80::1',
    'dashboard.internal',
    'localhost.example.com',
  ])('%s is reachable from elsewhere', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});

describe('dashboardCredentials', () => {
  const creds = { user: 'ops', password: 'correct horse battery' };

  it('leaves loopback open unless credentials are configured', () => {
    expect(dashboardCredentials('127.0.0.1', undefined)).toBeUndefined();
    expect(dashboardCredentials('127.0.0.1', creds)).toBe(creds);
  });

  it('asks for credentials anywhere else, and refuses to start without them', () => {
    expect(dashboardCredentials('0.0.0.0', creds)).toBe(creds);
    const refusal = (() => {
      try {
        return dashboardCredentials('0.0.0.0', undefined);
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(UsageError);
    expect((refusal as UsageError).exitCode).toBe(2);
    expect((refusal as UsageError).message).toMatchInlineSnapshot(
      `"refusing to serve the dashboard on 0.0.0.0 without a password: set HARVEST_DASHBOARD_USER and HARVEST_DASHBOARD_PASSWORD, or keep the default --host 127.0.0.1"`,
    );
  });
});

describe('the dashboard password beyond loopback', () => {
  const refusalOf = (host: string, password: string) => {
    try {
      dashboardCredentials(host, { user: 'ops', password });
      return undefined;
    } catch (error) {
      return error as UsageError;
    }
  };

  it('needs 16 characters at least, counted as characters', () => {
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'dashboard.internal']) {
      const refusal = refusalOf(host, 'x');
      expect(refusal, host).toBeInstanceOf(UsageError);
      expect(refusal?.exitCode).toBe(2);
    }
    expect(refusalOf('0.0.0.0', 'x')?.message).toBe(
      'refusing to serve the dashboard on 0.0.0.0 with a short password: HARVEST_DASHBOARD_PASSWORD needs 16 characters at least beyond loopback (a random one: `openssl rand -hex 16`)',
    );
    expect(refusalOf('0.0.0.0', 'correct horse15')).toBeInstanceOf(UsageError);
    expect(refusalOf('0.0.0.0', 'correct horse 16')).toBeUndefined();
    // 15 characters of two bytes each are still 15 characters.
    expect(refusalOf('0.0.0.0', 'é'.repeat(15))).toBeInstanceOf(UsageError);
  });

  it('takes any password on loopback, where the host is the boundary', () => {
    expect(refusalOf('127.0.0.1', 'x')).toBeUndefined();
    expect(refusalOf('localhost', 'x')).toBeUndefined();
  });
});

describe('fromThisHost', () => {
  it('takes loopback names in Host and Origin, nothing else', () => {
    expect(fromThisHost({ host: '127.0.0.1:3100' })).toBe(true);
    expect(fromThisHost({ host: 'localhost:3100', origin: 'http://localhost:3100' })).toBe(true);
    expect(fromThisHost({ host: '[::1]:3100', origin: 'http://[::1]:3100' })).toBe(true);
    expect(fromThisHost({ host: 'rebind.evil.example:3100' })).toBe(false);
    expect(fromThisHost({ host: '127.0.0.1:3100', origin: 'https://evil.example' })).toBe(false);
    expect(fromThisHost({ host: '127.0.0.1:3100', origin: 'null' })).toBe(false);
    expect(fromThisHost({})).toBe(false);
  });
});
