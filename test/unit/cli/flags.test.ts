/** Number flags: plain decimal digits only (`Number` alone takes 0x10, 1e1 and ''). */
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { port, positiveInt } from '../../../src/cli/flags.ts';

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

  it('port takes decimal digits from 0 to 65535 only', () => {
    expect(port('0')).toBe(0);
    expect(port('9464')).toBe(9464);
    expect(port('65535')).toBe(65_535);
    for (const bad of ['', ' ', '0x10', '1e3', '65536', '-1', '80.0', ' 80']) {
      expect(() => port(bad), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
  });
});
