import { describe, expect, it } from 'vitest';
import {
  DOMAIN_CONFLICT_MESSAGE,
  DOMAIN_MESSAGE,
  INTEGRATION_MESSAGE,
  INTEGRATIONS,
  isIntegration,
  isTbs,
  SearchRequestObjectSchema,
  SearchRequestSchema,
  tbsProblem,
} from '../../../src/contract/index.ts';
import { chars, searchIssues } from './helpers.ts';

const ok = (body: unknown) => expect(searchIssues(body)).toEqual([]);

describe('SearchRequestSchema: query', () => {
  it('accepts 0 to 500 characters (the reference sets no minimum), rejects 501', () => {
    ok({ query: '' });
    ok({ query: 'a' });
    ok({ query: chars(500) });
    expect(searchIssues({ query: chars(501) })).toMatchInlineSnapshot(`
      [
        "query: Too big: expected string to have <=500 characters",
      ]
    `);
  });

  it('is required', () => {
    expect(searchIssues({})).toMatchInlineSnapshot(`
      [
        "query: Invalid input: expected string, received undefined",
      ]
    `);
  });

  it('keeps the query verbatim (no trimming)', () => {
    expect(SearchRequestSchema.parse({ query: '  x  ' }).query).toBe('  x  ');
  });
});

describe('SearchRequestSchema: limit', () => {
  it.each([1, 10, 100])('accepts %d', (limit) => ok({ query: 'q', limit }));
  it.each([0, 101, -1, 5.5, '10', null])('rejects %j', (limit) => {
    expect(searchIssues({ query: 'q', limit })).toHaveLength(1);
    expect(searchIssues({ query: 'q', limit })[0]).toMatch(/^limit: /);
  });
  it('names the bound', () => {
    expect(searchIssues({ query: 'q', limit: 101 })).toMatchInlineSnapshot(`
      [
        "limit: Too big: expected number to be <=100",
      ]
    `);
    expect(searchIssues({ query: 'q', limit: '10' })).toMatchInlineSnapshot(`
      [
        "limit: Invalid input: expected number, received string",
      ]
    `);
  });
});

describe('SearchRequestSchema: keys', () => {
  it('rejects unknown top-level keys at the root', () => {
    expect(searchIssues({ query: 'q', formats: ['markdown'], a: 1 })).toMatchInlineSnapshot(`
      [
        ": Unrecognized keys: "formats", "a"",
      ]
    `);
  });

  it('accepts origin strings, nothing else for it', () => {
    ok({ query: 'q', origin: 'js-sdk@4.42.0' });
    ok({ query: 'q', origin: 'python-sdk@4.3.0' });
    expect(searchIssues({ query: 'q', origin: 5 })[0]).toMatch(/^origin: /);
  });

  it("integration: only the hosted service's names (or its `_` internal names)", () => {
    for (const integration of INTEGRATIONS) ok({ query: 'q', integration });
    ok({ query: 'q', integration: '_internal' });
    for (const integration of ['my-app', 'N8N', ' n8n', '', 'js-sdk']) {
      expect(searchIssues({ query: 'q', integration })).toEqual([
        `integration: ${INTEGRATION_MESSAGE}`,
      ]);
    }
    expect(searchIssues({ query: 'q', integration: null })[0]).toMatch(/^integration: /);
    expect(INTEGRATIONS).toContain('n8n');
    expect(isIntegration('zapier')).toBe(true);
    expect(isIntegration('zapier2')).toBe(false);
    expect(isIntegration(1)).toBe(false);
  });

  it('accepts the hosted-service extras filter, lang and __agentInterop', () => {
    const parsed = SearchRequestSchema.parse({
      query: 'q',
      filter: '0',
      lang: 'de',
      __agentInterop: { auth: 'x', requestId: 'r', shouldBill: false, extra: 1 },
    });
    expect(parsed.__agentInterop).toEqual({ auth: 'x', requestId: 'r', shouldBill: false });
  });

  it('__agentInterop needs auth, requestId and shouldBill, as the hosted service does', () => {
    expect(searchIssues({ query: 'q', __agentInterop: {} })).toEqual([
      '__agentInterop.auth: Invalid input: expected string, received undefined',
      '__agentInterop.requestId: Invalid input: expected string, received undefined',
      '__agentInterop.shouldBill: Invalid input: expected boolean, received undefined',
    ]);
    expect(
      searchIssues({ query: 'q', __agentInterop: { auth: 'x', requestId: 'r', shouldBill: 'no' } }),
    ).toHaveLength(1);
    expect(searchIssues({ query: 'q', __agentInterop: 'x' })[0]).toMatch(/^__agentInterop: /);
  });

  it("rejects the hosted service's internal top-level fields", () => {
    for (const key of ['__searchPreviewToken', 'asyncScraping', '__experimental_omce']) {
      expect(searchIssues({ query: 'q', [key]: true })).toEqual([`: Unrecognized key: "${key}"`]);
    }
  });

  it('exposes an unrefined object schema for extension', () => {
    const noQuery = SearchRequestObjectSchema.omit({ query: true });
    expect(noQuery.safeParse({ limit: 5 }).success).toBe(true);
  });
});

describe('SearchRequestSchema: sources and categories', () => {
  it('accepts all strings or all objects', () => {
    ok({ query: 'q', sources: ['web', 'news', 'images'] });
    ok({
      query: 'q',
      sources: [{ type: 'web', tbs: 'qdr:d', location: 'Paris' }, { type: 'news' }],
    });
    ok({ query: 'q', sources: [] });
  });

  it('rejects mixed forms', () => {
    expect(searchIssues({ query: 'q', sources: ['web', { type: 'news' }] })).toMatchInlineSnapshot(`
      [
        "sources: sources must be all strings or all objects, not mixed",
      ]
    `);
    expect(
      searchIssues({ query: 'q', categories: ['github', { type: 'pdf' }] }),
    ).toMatchInlineSnapshot(`
      [
        "categories: categories must be all strings or all objects, not mixed",
      ]
    `);
  });

  it('allows tbs and location only on web source objects', () => {
    expect(searchIssues({ query: 'q', sources: [{ type: 'news', tbs: 'qdr:d' }] })).toHaveLength(1);
    expect(
      searchIssues({ query: 'q', sources: [{ type: 'images', location: 'Paris' }] }),
    ).toHaveLength(1);
    expect(searchIssues({ query: 'q', sources: [{ type: 'web', size: 'l' }] })).toHaveLength(1);
  });

  it('rejects unknown source types', () => {
    expect(searchIssues({ query: 'q', sources: ['video'] })).toHaveLength(1);
  });

  it('knows github, research, pdf and developer categories', () => {
    ok({ query: 'q', categories: ['github', 'research', 'pdf', 'developer'] });
    ok({ query: 'q', categories: [{ type: 'developer' }] });
    expect(searchIssues({ query: 'q', categories: ['docs'] })).toHaveLength(1);
    expect(searchIssues({ query: 'q', categories: [{ type: 'pdf', x: 1 }] })).toHaveLength(1);
  });
});

describe('SearchRequestSchema: domains', () => {
  it('trims and lowercases', () => {
    const parsed = SearchRequestSchema.parse({
      query: 'q',
      includeDomains: ['  Example.COM ', 'xn--bcher-kva.example'],
    });
    expect(parsed.includeDomains).toEqual(['example.com', 'xn--bcher-kva.example']);
  });

  it.each([
    'http://a.com',
    'a.com/path',
    'a.com:8080',
    '',
    'not a domain',
    '-a.com',
    'a-.com',
    `${chars(64)}.com`,
    'a..com',
  ])('rejects %j', (domain) => {
    expect(searchIssues({ query: 'q', excludeDomains: [domain] })).toEqual([
      `excludeDomains.0: ${DOMAIN_MESSAGE}`,
    ]);
  });

  it('accepts a 63-character label', () => {
    ok({ query: 'q', includeDomains: [`${chars(63)}.com`] });
  });

  it('rejects both lists non-empty, at the root', () => {
    expect(
      searchIssues({ query: 'q', includeDomains: ['a.com'], excludeDomains: ['b.com'] }),
    ).toEqual([`: ${DOMAIN_CONFLICT_MESSAGE}`]);
  });

  it('allows one of them empty', () => {
    ok({ query: 'q', includeDomains: ['a.com'], excludeDomains: [] });
    ok({ query: 'q', includeDomains: [], excludeDomains: ['b.com'] });
  });

  it('reports an entry error and the conflict together (as the hosted service does)', () => {
    expect(
      searchIssues({ query: 'q', includeDomains: ['http://a.com'], excludeDomains: ['b.com'] }),
    ).toEqual([`includeDomains.0: ${DOMAIN_MESSAGE}`, `: ${DOMAIN_CONFLICT_MESSAGE}`]);
  });
});

describe('SearchRequestSchema: tbs', () => {
  it.each([
    'qdr:h',
    'qdr:d',
    'qdr:w',
    'qdr:m',
    'qdr:y',
    'sbd:1',
    'sbd:1,qdr:w',
    'cdr:1,cd_min:01/01/2024,cd_max:12/31/2024',
    'cdr:1,cd_min:1/1/2024,cd_max:1/31/2024,sbd:1',
    // "Values combine with commas": the reference limits neither which nor how often.
    'qdr:d,qdr:w',
    'qdr:d,cdr:1,cd_min:01/01/2024,cd_max:12/31/2024',
  ])('accepts %s', (tbs) => {
    ok({ query: 'q', tbs });
    ok({ query: 'q', sources: [{ type: 'web', tbs }] });
  });

  it.each([
    'qdr:x',
    'qdr:',
    'sbd:2',
    'cdr:1',
    'cd_min:01/01/2024',
    'cdr:1,cd_min:13/01/2024,cd_max:12/31/2024',
    'cdr:1,cd_min:2024-01-01,cd_max:12/31/2024',
    '',
    'last week',
  ])('rejects %j', (tbs) => {
    expect(isTbs(tbs)).toBe(false);
    expect(searchIssues({ query: 'q', tbs })).toHaveLength(1);
  });

  it('says what is wrong', () => {
    expect(tbsProblem('qdr:d,qdr:x')).toMatchInlineSnapshot(`"unknown tbs part "qdr:x""`);
    expect(searchIssues({ query: 'q', tbs: 'cdr:1' })).toMatchInlineSnapshot(`
      [
        "tbs: Invalid tbs: a custom range needs cdr:1, cd_min and cd_max",
      ]
    `);
  });
});

describe('SearchRequestSchema: other fields', () => {
  it('timeout: positive integer without maximum', () => {
    ok({ query: 'q', timeout: 1 });
    ok({ query: 'q', timeout: 3_600_000 });
    expect(searchIssues({ query: 'q', timeout: 0 })).toHaveLength(1);
    expect(searchIssues({ query: 'q', timeout: 1.5 })).toHaveLength(1);
  });

  it('enterprise: anon and zdr, empty allowed', () => {
    ok({ query: 'q', enterprise: ['anon', 'zdr'] });
    ok({ query: 'q', enterprise: [] });
    expect(searchIssues({ query: 'q', enterprise: ['private'] })).toMatchInlineSnapshot(`
      [
        "enterprise.0: Invalid option: expected one of "anon"|"zdr"",
      ]
    `);
  });

  it('booleans are not coerced', () => {
    ok({ query: 'q', safe: true, ignoreInvalidURLs: true, highlights: false });
    expect(searchIssues({ query: 'q', safe: 'true' })).toHaveLength(1);
    expect(searchIssues({ query: 'q', highlights: 1 })).toHaveLength(1);
  });

  it('location and country are strings', () => {
    ok({ query: 'q', location: 'Berlin,Germany', country: 'DE' });
    expect(searchIssues({ query: 'q', location: { country: 'US' } })).toHaveLength(1);
  });

  it('scrapeOptions must be an object', () => {
    expect(searchIssues({ query: 'q', scrapeOptions: [] })[0]).toMatch(/^scrapeOptions: /);
  });
});
