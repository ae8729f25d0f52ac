import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parsePipeline, parsePipelineBytes, plan, taskKey } from '../../../src/pipeline/index.ts';

function checkResult(result: ReturnType<typeof parsePipeline>): void {
  if (result.ok) {
    expect(() => plan(result.value)).not.toThrow();
    return;
  }
  expect(result.issues.length).toBeGreaterThan(0);
  for (const issue of result.issues) {
    expect(issue.line).toBeGreaterThanOrEqual(1);
    expect(issue.col).toBeGreaterThanOrEqual(1);
    expect(typeof issue.message).toBe('string');
  }
  expect(result.issues.some((issue) => issue.severity === 'error')).toBe(true);
}

const FIELDS = [
  'name',
  'searches',
  'query',
  'limit',
  'matrix',
  'scrapeOptions',
  'formats',
  'defaults',
  'topic',
  'id',
];
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom('markdown', '{topic} x', 'web', 'a.com'),
    fc.array(tie('any'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string()), tie('any'), { maxKeys: 5 }),
  ),
})).any;

describe('properties', () => {
  it('arbitrary bytes never throw, and every failure has a position', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        checkResult(parsePipelineBytes(bytes, 'f.yaml'));
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary text never throws', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        checkResult(parsePipeline(text, 'f.yaml'));
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary YAML documents never throw', () => {
    fc.assert(
      fc.property(value, (data) => {
        checkResult(parsePipeline(stringify(data), 'f.yaml'));
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary pipelines near the format never throw', () => {
    const item = fc.record(
      {
        query: fc.oneof(fc.string(), fc.constant('{topic} news')),
        limit: fc.oneof(fc.integer({ min: -5, max: 120 }), fc.string()),
        matrix: fc.dictionary(
          fc.constantFrom('topic', 'limit', 'country', 'x'),
          fc.array(value, { maxLength: 3 }),
          { maxKeys: 3 },
        ),
        scrapeOptions: fc.record(
          { formats: fc.array(value, { maxLength: 3 }), waitFor: fc.integer() },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(item, { maxLength: 4 }), (searches) => {
        checkResult(parsePipeline(stringify({ name: 'p', searches }), 'f.yaml'));
      }),
      { numRuns: 300 },
    );
  });

  it('keys do not depend on key order', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 8 }), (record) => {
        const reversed = Object.fromEntries(Object.entries(record).reverse());
        expect(taskKey(reversed)).toBe(taskKey(record));
      }),
    );
  });
});
