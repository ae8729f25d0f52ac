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
  const creds = { user: 'ops', password: 'pw' };

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
