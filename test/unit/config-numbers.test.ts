/**
 * Every numeric setting is read alike: digits only ("a whole number"), so a hex, exponent or
 * blank-padded value is refused rather than read as some other number.
 */
import { describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../../src/config.ts';

describe('numeric settings are read alike', () => {
  it('HARVEST_QUEUE_WINDOW (the reference behaviour) refuses hex, exponents and blanks', () => {
    for (const text of ['0x10', '1e4', ' 100 ']) {
      expect(() => loadSettings({ HARVEST_QUEUE_WINDOW: text })).toThrow(SettingsError);
    }
  });

  it('HARVEST_NOTIFY_ATTEMPTS refuses them too', () => {
    for (const text of ['0x5', '1e1', ' 3 ']) {
      expect(() => loadSettings({ HARVEST_NOTIFY_ATTEMPTS: text }), text).toThrow(SettingsError);
    }
  });

  it('HARVEST_MAX_RESPONSE_BYTES refuses them too', () => {
    for (const text of ['0x100000', '1e9', ' 2048 ']) {
      expect(() => loadSettings({ HARVEST_MAX_RESPONSE_BYTES: text }), text).toThrow(SettingsError);
    }
  });

  it('HARVEST_API_PROBE_MAX_MS: default 3 min, at least 100 ms, digits only', () => {
    expect(loadSettings({}).apiProbeMaxMs).toBe(180_000);
    expect(loadSettings({ HARVEST_API_PROBE_MAX_MS: '1000' }).apiProbeMaxMs).toBe(1000);
    for (const text of ['0x10', '1e4', ' 100 ', '99']) {
      expect(() => loadSettings({ HARVEST_API_PROBE_MAX_MS: text }), text).toThrow(SettingsError);
    }
  });

  it('says "a whole number" for a word, as the other numeric settings do', () => {
    let message = '';
    try {
      loadSettings({ HARVEST_NOTIFY_ATTEMPTS: 'ten' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('HARVEST_NOTIFY_ATTEMPTS: a whole number');
  });
});
