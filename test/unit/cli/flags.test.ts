/** Number flags: plain decimal digits only (`Number` alone takes 0x10, 1e1 and ''). */
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  duration,
  MAX_CONCURRENCY,
  port,
  positiveInt,
} from '../../../src/cli/flags.ts';

describe('number flags', () => {
  it('positiveInt takes decimal digits >= 1 only', () => {
    expect(positiveInt('1')).toBe(1);
    expect(positiveInt('16')).toBe(16);
    expect(positiveInt('030')).toBe(30);
    for (const bad of ['0x10', '1e1', '', ' ', ' 8', '8 ', '0', '-1', '+5', '1.0', '1.5', '0b1']) {
      expect(() => positiveInt(bad), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
    expect(() => positiveInt('99999999999999999999')).toThrow(InvalidArgumentError);
    expect(() => positiveInt('0x10')).toThrow('expected a whole number >= 1, in decimal digits');
  });

  it('concurrency takes decimal digits from 1 to MAX_CONCURRENCY only', () => {
    expect(MAX_CONCURRENCY).toBe(10_000);
    expect(concurrency('1')).toBe(1);
    expect(concurrency('10000')).toBe(10_000);
    for (const bad of ['0', '10001', '99999999', '1e4', '', '-1', '0x10']) {
      expect(() => concurrency(bad), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
    expect(() => concurrency('99999999')).toThrow('expected a whole number from 1 to 10000');
  });

  it('port takes decimal digits from 0 to 65535 only', () => {
    expect(port('0')).toBe(0);
    expect(port('9464')).toBe(9464);
    expect(port('65535')).toBe(65_535);
    for (const bad of ['', ' ', '0x10', '1e3', '65536', '-1', '80.0', ' 80']) {
      expect(() => port(bad), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
  });
});

describe('duration', () => {
  it('takes a whole number with ms, s, m or h (seconds without a unit), in ms', () => {
    expect(['500ms', '90s', '90', '10m', '2h', ' 5m '].map(duration)).toEqual([
      500, 90_000, 90_000, 600_000, 7_200_000, 300_000,
    ]);
    for (const bad of ['', 'm', '1.5h', '-1s', '10 m', '1d', '0x10s']) {
      expect(() => duration(bad), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
  });
});
