import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/contract/canonical-json.ts';
import {
  type NormalisedSearchRequest,
  SearchRequestSchema,
  withSearchDefaults,
} from '../../../src/contract/index.ts';
import { canonicalRequest, seedOf } from '../../../src/sandbox/request-key.ts';

/** The definition: sorted keys, undefined values left out, fields that do not change results dropped. */
function reference(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const NOT_RESULT_FIELDS = ['origin', 'integration', 'timeout', '__agentInterop'];
const withoutNonResultFields = (request: object) =>
  Object.fromEntries(Object.entries(request).filter(([k]) => !NOT_RESULT_FIELDS.includes(k)));

describe('canonical JSON', () => {
  it('sorts keys at every level and leaves out undefined values', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined }, 'x'], C: null })).toBe(
      '{"C":null,"a":[{"d":2},"x"],"b":1}',
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(reference(value));
      }),
    );
  });

  it('of a request: its result fields only, whatever the order of its keys', () => {
    const body = fc.record(
      {
        query: fc.string({ minLength: 1, maxLength: 20 }),
        limit: fc.integer({ min: 1, max: 100 }),
        sources: fc.array(fc.constantFrom('web', 'news', 'images'), { maxLength: 3 }),
        categories: fc.array(fc.constantFrom('github', 'pdf'), { maxLength: 2 }),
        tbs: fc.constant('qdr:d'),
        country: fc.constantFrom('US', 'DE'),
        timeout: fc.integer({ min: 1, max: 100_000 }),
        origin: fc.string(),
        highlights: fc.boolean(),
        enterprise: fc.constant(['zdr']),
        scrapeOptions: fc.record(
          { formats: fc.constant(['markdown']), onlyMainContent: fc.boolean() },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: ['query'] },
    );
    fc.assert(
      fc.property(body, (input) => {
        const request = withSearchDefaults(SearchRequestSchema.parse(input));
        expect(canonicalRequest(request)).toBe(reference(withoutNonResultFields(request)));
      }),
    );
  });

  it('of an object with fields the contract does not know', () => {
    const request = {
      ...withSearchDefaults({ query: 'x' }),
      zeta: 1,
      alpha: { b: 2, a: 1 },
    } as NormalisedSearchRequest;
    expect(canonicalRequest(request)).toBe(reference(withoutNonResultFields(request)));
  });
});

describe('seedOf', () => {
  it('is the first 32 bits of the SHA-256 of the UTF-8 text', () => {
    for (const text of ['', '0\nbench 1', 'ünï 検索 🚀', '\ud800']) {
      expect(seedOf(text)).toBe(createHash('sha256').update(text).digest().readUInt32BE(0));
    }
  });
});
