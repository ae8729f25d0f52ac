import { describe, expect, it } from 'vitest';
import { ThreatProtectionSchema } from '../../../src/contract/index.ts';

const issues = (value: unknown) => {
  const result = ThreatProtectionSchema.safeParse(value);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};
const list = (n: number) => Array.from({ length: n }, (_, i) => `d${i}.example.com`);

describe('ThreatProtectionSchema', () => {
  it('accepts every field, all optional', () => {
    expect(issues({})).toEqual([]);
    expect(
      issues({
        mode: 'normal',
        riskScoreThreshold: 50,
        blacklist: ['*.bad.com', 'ads*.example.net'],
        whitelist: ['good.org'],
        blockedTlds: ['zip', 'co.uk'],
        failurePolicy: 'closed',
      }),
    ).toEqual([]);
  });

  it('riskScoreThreshold integer 0..100', () => {
    expect(issues({ riskScoreThreshold: 0 })).toEqual([]);
    expect(issues({ riskScoreThreshold: 100 })).toEqual([]);
    expect(issues({ riskScoreThreshold: -1 })).toHaveLength(1);
    expect(issues({ riskScoreThreshold: 101 })).toMatchInlineSnapshot(`
      [
        "riskScoreThreshold: Too big: expected number to be <=100",
      ]
    `);
    expect(issues({ riskScoreThreshold: 50.5 })).toHaveLength(1);
  });

  it('lists hold at most 1000 items', () => {
    for (const key of ['blacklist', 'whitelist']) {
      expect(issues({ [key]: list(1000) })).toEqual([]);
      expect(issues({ [key]: list(1001) })).toHaveLength(1);
    }
    const tlds = Array.from({ length: 1000 }, (_, i) => `t${i}`);
    expect(issues({ blockedTlds: tlds })).toEqual([]);
    expect(issues({ blockedTlds: [...tlds, 'x'] })).toMatchInlineSnapshot(`
      [
        "blockedTlds: Too big: expected array to have <=1000 items",
      ]
    `);
  });

  it('domains: trimmed and lowercased, no protocol, path or port', () => {
    expect(ThreatProtectionSchema.parse({ blacklist: [' *.Bad.com '] }).blacklist).toEqual([
      '*.bad.com',
    ]);
    for (const entry of ['http://bad.com', 'bad.com/x', 'bad.com:80', '', 'bad .com']) {
      expect(issues({ whitelist: [entry] })).toHaveLength(1);
    }
  });

  it('blockedTlds: normalised to lowercase, no leading dot', () => {
    expect(ThreatProtectionSchema.parse({ blockedTlds: [' ZIP '] }).blockedTlds).toEqual(['zip']);
    expect(issues({ blockedTlds: ['.zip'] })).toMatchInlineSnapshot(`
      [
        "blockedTlds.0: Must be a lowercase TLD without a leading dot",
      ]
    `);
  });

  it('enums and unknown keys', () => {
    expect(issues({ mode: 'strict' })).toHaveLength(1);
    expect(issues({ failurePolicy: 'retry' })).toHaveLength(1);
    expect(issues({ mode: 'off', extra: true })).toMatchInlineSnapshot(`
      [
        ": Unrecognized key: "extra"",
      ]
    `);
  });
});
