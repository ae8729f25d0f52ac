import { describe, expect, it } from 'vitest';
import {
  describeValue,
  didYouMean,
  editDistance,
  formatIssue,
  pathToString,
} from '../../../src/pipeline/index.ts';

describe('issues', () => {
  it('formats an issue as file:line:col path: message (received; allowed)', () => {
    expect(
      formatIssue({
        code: 'TOO_BIG',
        severity: 'error',
        file: 'a.yaml',
        line: 3,
        col: 12,
        path: 'searches[0].limit',
        message: 'too large',
        received: '101',
        allowed: 'at most 100',
      }),
    ).toBe('a.yaml:3:12 searches[0].limit: too large (received 101; allowed at most 100)');
  });

  it('marks warnings and names the file for root issues', () => {
    expect(
      formatIssue({
        code: 'X',
        severity: 'warning',
        file: 'a.yaml',
        line: 1,
        col: 1,
        path: '',
        message: 'm',
      }),
    ).toBe('a.yaml:1:1 (file): warning: m');
  });

  it('writes paths with indexes and quotes odd keys', () => {
    expect(pathToString(['searches', 3, 'scrapeOptions', 'formats', 1, 'quality'])).toBe(
      'searches[3].scrapeOptions.formats[1].quality',
    );
    expect(pathToString(['headers', 'User-Agent'])).toBe('headers["User-Agent"]');
  });

  it('measures Damerau distance with transpositions', () => {
    expect(editDistance('qurey', 'query')).toBe(1);
    expect(editDistance('limt', 'limit')).toBe(1);
    expect(editDistance('abc', 'xyz')).toBe(3);
  });

  it('suggests the closest key within distance 2, case-insensitively', () => {
    expect(didYouMean('limt', ['limit', 'location'])).toBe('limit');
    expect(didYouMean('IncludeDomains', ['includeDomains', 'excludeDomains'])).toBe(
      'includeDomains',
    );
    expect(didYouMean('banana', ['limit', 'query'])).toBeUndefined();
    expect(didYouMean('a', ['id'])).toBeUndefined();
  });

  it('renders values briefly', () => {
    expect(describeValue('x')).toBe('"x"');
    expect(describeValue(null)).toBe('null');
    expect(describeValue('y'.repeat(100)).length).toBe(60);
  });
});
