import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SearchRequestSchema } from '../../../src/contract/index.ts';
import { plainSearchRequest, validateSearchRequest } from '../../../src/sandbox/validate.ts';

/** Values of every JSON type, biased towards the edges of the plain fields' rules. */
const value = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('', 'web', 'news', 'images', 'video', 'a'.repeat(500), 'a'.repeat(501)),
  fc.constantFrom('n8n', 'zapier', '_internal', 'my-app', 'N8N'),
  fc.constantFrom(0, -0, 1, 5, 5.5, 100, 101, -5, 1e21, 2 ** 53, Number.MAX_SAFE_INTEGER),
  fc.integer({ min: -3, max: 120 }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.constantFrom('web', 'news', 'images', 'video', 1, null), { maxLength: 4 }),
  fc.constant([{ type: 'web' }]),
  fc.constant({ type: 'web' }),
);
const KEYS = [
  'query',
  'limit',
  'sources',
  'location',
  'country',
  'safe',
  'timeout',
  'ignoreInvalidURLs',
  'highlights',
  'origin',
  'integration',
  'filter',
  'lang',
  'tbs',
  'categories',
  'bogus',
];
const body = fc.dictionary(fc.constantFrom(...KEYS), value, { maxKeys: 6 });

describe('plain search bodies', () => {
  it('are accepted only when the schema accepts them, with the same output and key order', () => {
    fc.assert(
      fc.property(body, (input) => {
        const plain = plainSearchRequest(input);
        if (plain === undefined) return;
        const parsed = SearchRequestSchema.safeParse(input);
        expect(parsed.success).toBe(true);
        expect(plain).toStrictEqual(parsed.data);
        expect(Object.keys(plain)).toEqual(Object.keys(parsed.data!));
      }),
      { numRuns: 20_000 },
    );
  });

  it('cover the common shapes', () => {
    for (const input of [
      { query: 'bench 1', limit: 1 },
      { query: 'x', limit: 100, sources: ['web', 'news', 'images'], origin: 'js-sdk@4.42.0' },
      { query: 'x', integration: 'n8n', origin: 'python-sdk@4.3.0', limit: 5, timeout: 300000 },
      { query: 'x', sources: [], country: 'DE', safe: true, timeout: 5000, highlights: false },
    ]) {
      expect(plainSearchRequest(input)).toStrictEqual(SearchRequestSchema.parse(input));
    }
  });

  it('leave everything else to the schema', () => {
    for (const input of [
      { limit: 1 },
      { query: 'x'.repeat(501) },
      { query: 'x', limit: 0 },
      { query: 'x', limit: 5.5 },
      { query: 'x', safe: 'yes' },
      { query: 'x', sources: ['web', { type: 'news' }] },
      { query: 'x', tbs: 'qdr:d' },
      { query: 'x', bogus: 1 },
      { query: 'x', integration: 'my-app' },
      JSON.parse('{"query":"x","__proto__":{"limit":2}}'),
      null,
      [],
      'query',
    ]) {
      expect(plainSearchRequest(input)).toBeUndefined();
    }
  });

  it('validateSearchRequest answers as the schema does', () => {
    fc.assert(
      fc.property(body, (input) => {
        const result = validateSearchRequest(input);
        const parsed = SearchRequestSchema.safeParse(input);
        expect(result.ok).toBe(parsed.success);
        if (result.ok) expect(result.request).toStrictEqual(parsed.data);
      }),
      { numRuns: 5_000 },
    );
  });
});
