import { describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../../src/config.ts';

describe('loadSettings', () => {
  it('reads the dashboard credentials as a pair', () => {
    expect(loadSettings({}).dashboardAuth).toBeUndefined();
    expect(
      loadSettings({ HARVEST_DASHBOARD_USER: 'ops', HARVEST_DASHBOARD_PASSWORD: 'a b:c' })
        .dashboardAuth,
    ).toEqual({ user: 'ops', password: 'a b:c' });
    expect(() => loadSettings({ HARVEST_DASHBOARD_PASSWORD: 'pw' })).toThrow(SettingsError);
    expect(() =>
      loadSettings({ HARVEST_DASHBOARD_USER: 'o:ps', HARVEST_DASHBOARD_PASSWORD: 'pw' }),
    ).toThrow(/HARVEST_DASHBOARD_USER: no colon/);
  });

  it('reads the log format, auto by default', () => {
    expect(loadSettings({}).logFormat).toBe('auto');
    expect(loadSettings({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => loadSettings({ LOG_FORMAT: 'xml' })).toThrow(SettingsError);
  });

  it('takes a redis:// or rediss:// REDIS_URL only, and never repeats it in the error', () => {
    expect(loadSettings({}).redisUrl).toBe('redis://127.0.0.1:6379');
    expect(loadSettings({ REDIS_URL: 'rediss://:pw@cache.internal:6380/2' }).redisUrl).toBe(
      'rediss://:pw@cache.internal:6380/2',
    );
    for (const bad of ['redis://:s3cretpass@127.0.0.1:abc', 'foo', 'http://127.0.0.1:6379']) {
      let message = '';
      try {
        loadSettings({ REDIS_URL: bad });
      } catch (error) {
        expect(error).toBeInstanceOf(SettingsError);
        message = (error as Error).message;
      }
      expect(message).toContain('REDIS_URL: a redis:// or rediss:// address');
      expect(message).not.toContain('s3cretpass');
    }
  });

  it('takes the API base address without a version segment', () => {
    expect(loadSettings({ HARVEST_API_URL: 'http://127.0.0.1:3002' }).apiUrl).toBe(
      'http://127.0.0.1:3002',
    );
    expect(() => loadSettings({ HARVEST_API_URL: 'https://api.firecrawl.dev/v2' })).toThrow(
      /HARVEST_API_URL: the base address without its version segment/,
    );
    expect(() => loadSettings({ HARVEST_API_URL: 'not a url' })).toThrow(
      /HARVEST_API_URL: an http:\/\/ or https:\/\/ address/,
    );
  });

  it('says what is wrong in one line, each variable named, several joined with "; "', () => {
    const messageOf = (env: NodeJS.ProcessEnv) => {
      try {
        loadSettings(env);
      } catch (error) {
        expect(error).toBeInstanceOf(SettingsError);
        return (error as Error).message;
      }
      throw new Error('no error');
    };
    expect(messageOf({ HARVEST_QUEUE_WINDOW: 'abc' })).toBe(
      'invalid environment: HARVEST_QUEUE_WINDOW: a whole number',
    );
    const several = messageOf({ HARVEST_QUEUE_WINDOW: '1e3', HARVEST_PREFIX: 'bad prefix!' });
    expect(several).not.toContain('\n');
    expect(several).toMatch(/^invalid environment: \S+: .+; \S+: .+$/);
    expect(several).toContain('HARVEST_QUEUE_WINDOW: a whole number');
    expect(several).toContain('HARVEST_PREFIX: letters, digits, dot, dash and underscore only');
    expect(messageOf({ HARVEST_DASHBOARD_USER: 'ops' })).toBe(
      'invalid environment: HARVEST_DASHBOARD_USER and HARVEST_DASHBOARD_PASSWORD go together: set both or neither',
    );
  });

  it('reads the queue window, 10000 jobs by default', () => {
    expect(loadSettings({}).queueWindow).toBe(10_000);
    expect(loadSettings({ HARVEST_QUEUE_WINDOW: '500' }).queueWindow).toBe(500);
    expect(() => loadSettings({ HARVEST_QUEUE_WINDOW: '0' })).toThrow(/HARVEST_QUEUE_WINDOW/);
  });
});

describe('media settings', () => {
  it('have defaults', () => {
    expect(loadSettings({}).media).toEqual({
      concurrency: 8,
      maxReissues: 2,
      maxAttempts: 6,
      marginMaxMs: 300_000,
      timeoutMs: 30_000,
      maxTransferMs: 600_000,
      maxRedirects: 5,
      urgentMs: 60_000,
      allowHosts: [],
    });
  });

  it('read the transfer, API call and stop limits', () => {
    const defaults = loadSettings({});
    expect([defaults.apiTimeoutMs, defaults.stopGraceMs]).toEqual([65_000, 30_000]);
    const set = loadSettings({
      HARVEST_MEDIA_MAX_TRANSFER_MS: '2000',
      HARVEST_API_TIMEOUT_MS: '9000',
      HARVEST_STOP_GRACE_MS: '0',
    });
    expect([set.media.maxTransferMs, set.apiTimeoutMs, set.stopGraceMs]).toEqual([2000, 9000, 0]);
    expect(() => loadSettings({ HARVEST_MEDIA_MAX_TRANSFER_MS: '5' })).toThrow(
      /HARVEST_MEDIA_MAX_TRANSFER_MS/,
    );
  });

  it('are read from HARVEST_MEDIA_* variables', () => {
    const media = loadSettings({
      HARVEST_MEDIA_CONCURRENCY: '32',
      HARVEST_MEDIA_MAX_REISSUES: '0',
      HARVEST_MEDIA_ALLOW_HOSTS: 'media.internal, *.files.example ,10.0.0.5',
    }).media;
    expect(media).toMatchObject({
      concurrency: 32,
      maxReissues: 0,
      allowHosts: ['media.internal', '*.files.example', '10.0.0.5'],
    });
  });

  it('refuse what is not a whole number in range, or not a host name', () => {
    expect(() => loadSettings({ HARVEST_MEDIA_CONCURRENCY: '0' })).toThrow(
      /HARVEST_MEDIA_CONCURRENCY/,
    );
    expect(() => loadSettings({ HARVEST_MEDIA_MAX_REISSUES: '1.5' })).toThrow(/a whole number/);
    expect(() => loadSettings({ HARVEST_MEDIA_ALLOW_HOSTS: 'https://x.example/' })).toThrow(
      /HARVEST_MEDIA_ALLOW_HOSTS/,
    );
  });
});
