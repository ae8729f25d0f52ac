/**
 * Golden answers of the sandbox: scenarios of requests whose full answers (status, headers,
 * body) and final ledger are recorded in test/fixtures/sandbox-golden.json and compared by
 * golden.test.ts. Re-record only when an answer is meant to change:
 * `npx tsx test/unit/sandbox/golden-record.ts`.
 *
 * The clock is fixed; what stays random per answer (search ids, exception ids, media URL
 * signatures) is checked for its form and replaced by a placeholder before comparing.
 */

import { createHash } from 'node:crypto';
import {
  buildSandboxApp,
  type SandboxApp,
  type SandboxOptions,
} from '../../../src/sandbox/index.ts';
import { conformanceCases } from '../../helpers/conformance.ts';

export const GOLDEN_FILE = new URL('../../fixtures/sandbox-golden.json', import.meta.url);

/** The fixed clock of every scenario: 2026-11-22 10:14:33.250 UTC. */
export const NOW_MS = Date.UTC(2026, 10, 22, 10, 14, 33, 250);

export interface GoldenRequest {
  method?: 'GET' | 'POST';
  url?: string;
  /** Default: the default key as a bearer token. `content-type` defaults to JSON. */
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as is, instead of `body`. */
  raw?: string;
}

export interface GoldenScenario {
  name: string;
  options?: Omit<SandboxOptions, 'now'>;
  requests: GoldenRequest[];
  /** Send every request twice in a row (the second answer may come from the results cache). */
  twice?: boolean;
  /** Record a SHA-256 of each answer instead of the answer (for large generated sets). */
  digests?: boolean;
}

export interface GoldenAnswer {
  status: number;
  headers: Record<string, string>;
  /** The body parsed, when it is JSON; else `text`. */
  json?: unknown;
  text?: string;
  /** Statuses of GET requests to the media URLs in the answer. */
  media?: number[];
  /** SHA-256 of status, headers and body, in digest scenarios. */
  sha256?: string;
}

export interface GoldenRecord {
  name: string;
  answers: GoldenAnswer[];
  ledger: unknown;
}

const AUTH = { authorization: 'Bearer fc-sandbox' };

const conformance = conformanceCases;

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

const JSON_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    price: { type: 'number' },
    count: { type: 'integer' },
    inStock: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' } },
    kind: { enum: ['a', 'b', 'c'] },
    published: { type: 'string', format: 'date' },
    link: { type: ['string', 'null'], format: 'uri' },
  },
};

/** Varied valid searches: plain, sources, operators, filters, categories, options, formats. */
const SEARCHES: unknown[] = [
  ...range(40).map((n) => ({ query: `bench ${n}`, limit: 1 })),
  ...range(40).map((n) => ({ query: `bench ${n}`, limit: 5 })),
  ...range(20).map((n) => ({ query: `benchmark query ${n}`, limit: n + 1 })),
  { query: 'hello world' },
  { query: 'hello world', limit: 10 },
  { query: 'hello world', limit: 100 },
  { query: 'Hello World', limit: 3 },
  { query: '  spaced   out  query ', limit: 3 },
  { query: 'ünïcödé 検索 🚀', limit: 3 },
  { query: 'a'.repeat(500), limit: 2 },
  { query: 'x', limit: 1 },
  { query: 'typescript', sources: ['web', 'news', 'images'], limit: 5 },
  { query: 'typescript', sources: ['news'], limit: 7 },
  { query: 'typescript', sources: ['images'], limit: 7 },
  { query: 'typescript', sources: ['images', 'web'], limit: 3 },
  { query: 'typescript', sources: [], limit: 3 },
  { query: 'typescript', sources: [{ type: 'web' }, { type: 'news' }], limit: 4 },
  { query: 'typescript', sources: [{ type: 'web', tbs: 'qdr:d', location: 'Germany' }], limit: 4 },
  { query: 'typescript', sources: ['web', 'web'], limit: 2 },
  { query: 'rust site:github.com', limit: 5 },
  { query: 'rust site:www.github.com site:docs.rs', limit: 6 },
  { query: 'rust -site:github.com -site:medium.com', limit: 6 },
  { query: '"exact phrase" search', limit: 5 },
  { query: '"Exact Phrase" -excluded words', limit: 5 },
  { query: 'python -"bad phrase" -guide', limit: 8 },
  { query: 'report filetype:pdf', limit: 5 },
  { query: 'report ext:.docx', limit: 5 },
  { query: 'report -filetype:pdf', limit: 5 },
  { query: 'inurl:docs api', limit: 5 },
  { query: 'api -inurl:blog', limit: 5 },
  { query: 'intitle:guide rust', limit: 5 },
  { query: 'rust -intitle:overview', limit: 5 },
  { query: 'allintitle: rust async guide', limit: 5 },
  { query: 'allinurl: docs api reference', limit: 5 },
  { query: 'allintitle:"quoted first" word', limit: 4 },
  { query: 'related:example.com', limit: 5 },
  { query: 'related:"not a host" thing', limit: 5 },
  { query: 'site:"two words" thing', limit: 3 },
  { query: 'site:foo/bar thing', limit: 3 },
  { query: 'filetype:pdf? thing', limit: 3 },
  { query: 'site:127.0.0.1 local', limit: 3 },
  { query: 'foo:bar baz', limit: 4 },
  { query: 'cats imagesize:800x600', sources: ['images'], limit: 5 },
  { query: 'cats larger:1000x700', sources: ['images'], limit: 5 },
  { query: 'cats larger:5000x5000', sources: ['images', 'web'], limit: 3 },
  { query: 'news site:reuters.com', sources: ['news', 'web'], limit: 5 },
  { query: 'domains', includeDomains: ['example.com', 'Docs.Example.org '], limit: 6 },
  { query: 'domains', excludeDomains: ['medium.com', 'dev.to'], limit: 6 },
  { query: 'domains', includeDomains: ['example.com'], excludeDomains: [], limit: 6 },
  { query: 'neural nets', categories: ['github'], limit: 5 },
  { query: 'neural nets', categories: [{ type: 'research' }], limit: 6 },
  { query: 'neural nets', categories: ['pdf', 'developer'], limit: 6 },
  { query: 'neural nets', categories: ['research', 'github', 'pdf'], limit: 9 },
  { query: 'neural nets', categories: [], limit: 2 },
  { query: 'weather', tbs: 'qdr:w', limit: 3 },
  { query: 'weather', location: 'San Francisco,California,United States', limit: 3 },
  { query: 'weather', country: 'DE', lang: 'de', filter: '0', safe: true, limit: 3 },
  {
    query: 'weather',
    ignoreInvalidURLs: true,
    highlights: false,
    timeout: 5000,
    origin: 'js-sdk@4.42.0',
    integration: 'n8n',
    limit: 3,
  },
  {
    query: 'weather',
    __agentInterop: { auth: 'a', requestId: 'r1', shouldBill: false, extra: 1 },
    limit: 3,
  },
  { query: 'weather', enterprise: ['zdr'], limit: 12 },
  { query: 'weather', enterprise: ['anon'], limit: 12 },
  { query: 'weather', limit: 11, sources: ['web', 'news'] },
  { query: 'scrape', scrapeOptions: {}, limit: 3 },
  { query: 'scrape', scrapeOptions: { formats: [] }, limit: 3 },
  { query: 'scrape', scrapeOptions: { formats: ['markdown'] }, limit: 5 },
  {
    query: 'scrape all',
    scrapeOptions: { formats: ['markdown', 'html', 'rawHtml', 'links', 'images', 'summary'] },
    sources: ['web', 'news', 'images'],
    limit: 4,
  },
  {
    query: 'scrape <b>&amp</b>',
    scrapeOptions: { formats: ['html', 'rawHtml', 'branding', 'product', 'menu'] },
    limit: 3,
  },
  { query: 'scrape', scrapeOptions: { formats: ['changeTracking'] }, limit: 3 },
  {
    query: 'scrape json',
    scrapeOptions: { formats: [{ type: 'json', schema: JSON_SCHEMA }] },
    limit: 4,
  },
  {
    query: 'scrape json',
    scrapeOptions: { formats: [{ type: 'json', prompt: 'the price' }] },
    limit: 4,
  },
  { query: 'scrape json', scrapeOptions: { formats: [{ type: 'json' }] }, limit: 2 },
  {
    query: 'scrape ask',
    scrapeOptions: {
      formats: [
        { type: 'question', question: 'what?' },
        { type: 'highlights', query: 'key points' },
      ],
    },
    limit: 4,
  },
  {
    query: 'scrape media',
    scrapeOptions: { formats: ['screenshot', 'markdown'] },
    sources: ['web', 'news'],
    limit: 4,
  },
  {
    query: 'scrape media',
    scrapeOptions: { formats: [{ type: 'screenshot', fullPage: true }, 'audio', 'video'] },
    limit: 3,
  },
  {
    query: 'scrape costly',
    scrapeOptions: { formats: ['markdown'], lockdown: true, redactPII: true },
    limit: 4,
  },
  {
    query: 'scrape costly',
    scrapeOptions: { formats: ['markdown'], redactPII: { mode: 'fast' } },
    limit: 4,
  },
  { query: 'papers filetype:pdf', scrapeOptions: { formats: ['markdown'] }, limit: 8 },
  {
    query: 'papers filetype:pdf',
    scrapeOptions: { formats: ['markdown'], parsers: [{ type: 'pdf', maxPages: 2 }] },
    limit: 8,
  },
  {
    query: 'papers filetype:pdf',
    scrapeOptions: { formats: ['markdown'], parsers: [] },
    limit: 8,
  },
  {
    query: 'papers',
    categories: ['pdf'],
    scrapeOptions: { formats: ['markdown'], timeout: 30000, waitFor: 1000 },
    limit: 8,
  },
  {
    query: 'scrape options',
    scrapeOptions: {
      formats: ['markdown'],
      onlyMainContent: false,
      headers: { 'x-a': 'b' },
      location: { country: 'DE', languages: ['de'] },
      mobile: true,
      proxy: 'enhanced',
      maxAge: 0,
      actions: [{ type: 'wait', milliseconds: 100 }],
    },
    limit: 3,
  },
  { query: 'scrape many', scrapeOptions: { formats: ['markdown'] }, limit: 20 },
  // As the official Python client sends scrape options (fastMode with every set).
  { query: 'scrape', scrapeOptions: { formats: ['markdown'], fastMode: false }, limit: 3 },
];

/** Bodies the sandbox must reject, each with its exact 400 answer. */
const INVALID: unknown[] = [
  {},
  { query: ['x'] },
  { query: 'a'.repeat(501) },
  { query: 5 },
  { query: 'x', limit: 0 },
  { query: 'x', limit: 101 },
  { query: 'x', limit: '10' },
  { query: 'x', limit: 5.5 },
  { query: 'x', limit: null },
  { query: 'x', bogus: 1 },
  { query: 'x', limit: '10', bogus: 1 },
  { query: 'x', sources: ['web', { type: 'news' }] },
  { query: 'x', sources: ['video'] },
  { query: 'x', sources: [{ type: 'news', tbs: 'qdr:d' }] },
  { query: 'x', categories: ['github', { type: 'pdf' }] },
  { query: 'x', includeDomains: ['https://example.com'] },
  { query: 'x', includeDomains: ['a.com'], excludeDomains: ['b.com'] },
  { query: 'x', tbs: 'nonsense' },
  { query: 'x', timeout: 0 },
  { query: 'x', scrapeOptions: { formats: ['question'] } },
  { query: 'x', scrapeOptions: { formats: ['markdown'], bogus: true } },
  { query: 'x', scrapeOptions: { waitFor: 40000, timeout: 60000 } },
  { query: 'x', threatProtection: { mode: 'strict' } },
  { query: 'x', safe: 'yes' },
  { query: 'x', country: 1 },
  { query: 'x', location: ['Berlin'] },
  { query: 'x', lang: 5, filter: true },
  { query: 'x', timeout: 1.5 },
  { query: 'x', timeout: -5 },
  { query: 'x', highlights: 'true', ignoreInvalidURLs: 0 },
  { query: 'x', origin: null, integration: 1 },
  { query: 'x', integration: 'not-an-integration' },
  { query: 'x', __agentInterop: { requestId: 'r1', shouldBill: false } },
  { query: 'x', __searchPreviewToken: 't', scrapeOptions: { useMock: 'm' } },
  { query: 'x', sources: 'web' },
  { query: 'x', sources: [null] },
  { query: 'x', limit: 1e21 },
  { query: 'x', limit: -0 },
  { limit: 5, sources: ['web'] },
  [],
  'just a string',
  42,
  null,
];

/** mulberry32, kept here so the generated requests never depend on the code under test. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const WORDS = ['rust', 'Async', 'guide', 'news', 'café', 'data', 'GPU', 'llm', 'x', 'bench', '42'];
const OPERATORS = [
  'site:github.com',
  '-site:medium.com',
  'site:www.example.com',
  'filetype:pdf',
  '-filetype:pdf',
  'ext:md',
  'inurl:docs',
  '-inurl:blog',
  'intitle:guide',
  '-intitle:notes',
  'allintitle:',
  'allinurl:',
  'related:dev.to',
  'imagesize:1024x768',
  'larger:700x500',
  '"quoted words"',
  '-"bad words"',
  '-guide',
  'unknown:op',
];

/** Searches drawn from a fixed seed: words, operators, sources, categories, limits, formats. */
function generatedSearches(count: number): unknown[] {
  const random = prng(20261122);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const some = <T>(items: readonly T[], max: number) =>
    range(Math.floor(random() * (max + 1))).map(() => pick(items));
  return range(count).map((n) => {
    const query = [...some(WORDS, 3), ...(random() < 0.4 ? some(OPERATORS, 2) : []), `q${n}`]
      .sort(() => random() - 0.5)
      .join(' ');
    const body: Record<string, unknown> = { query };
    if (random() < 0.9) body.limit = 1 + Math.floor(random() * (random() < 0.8 ? 5 : 30));
    if (random() < 0.25) body.sources = some(['web', 'news', 'images'], 3);
    if (random() < 0.1) body.categories = some(['github', 'research', 'pdf', 'developer'], 2);
    const domains = random();
    if (domains < 0.1) body.includeDomains = some(['example.com', 'github.com', 'dev.to'], 2);
    else if (domains < 0.2) body.excludeDomains = some(['example.com', 'medium.com'], 2);
    if (random() < 0.1) body.tbs = pick(['qdr:h', 'qdr:d', 'qdr:m']);
    if (random() < 0.1) body.country = pick(['US', 'DE', 'fr']);
    if (random() < 0.05) body.enterprise = [pick(['zdr', 'anon'])];
    if (random() < 0.1) body.timeout = 1000 + Math.floor(random() * 60_000);
    if (random() < 0.1) body.origin = 'js-sdk@4.42.0';
    if (random() < 0.15) {
      body.scrapeOptions = {
        formats: some(['markdown', 'html', 'links', 'summary', 'images', 'json'], 3),
        ...(random() < 0.3 ? { parsers: [] } : {}),
      };
    }
    if (random() < 0.05) body.limit = pick([0, '3', 2.5, null]);
    return body;
  });
}

export const SCENARIOS: GoldenScenario[] = [
  {
    name: 'generated searches (digests)',
    requests: generatedSearches(1500).map((body) => ({ body })),
    digests: true,
  },
  {
    name: 'generated searches at epoch 3 (digests)',
    options: { epoch: 3 },
    requests: generatedSearches(400).map((body) => ({ body })),
    digests: true,
  },
  { name: 'valid searches, each twice', requests: SEARCHES.map((body) => ({ body })), twice: true },
  {
    name: 'valid searches with another seed',
    options: { seed: 12345 },
    requests: SEARCHES.slice(0, 30)
      .concat(SEARCHES.slice(100))
      .map((body) => ({ body })),
  },
  { name: 'invalid bodies', requests: INVALID.map((body) => ({ body })), twice: true },
  {
    name: 'conformance bodies',
    requests: conformance.map((c) => ({ body: c.body })),
  },
  {
    name: 'auth and malformed bodies',
    requests: [
      { headers: {}, body: { query: 'x' } },
      { headers: { authorization: 'Bearer ' }, body: { query: 'x' } },
      { headers: { authorization: 'Bearer fc-nope' }, body: { query: 'x' } },
      { headers: { authorization: 'bearer   fc-sandbox  ' }, body: { query: 'x', limit: 1 } },
      { headers: {}, raw: '{"query":' },
      { raw: '{"query":' },
      { raw: '' },
      { raw: 'null' },
      { raw: '{"query":"x","query":"y"}' },
      { raw: '{"query":"x","__proto__":{"limit":2}}' },
      { raw: '{"query":"x","limit":100.0,"sources":[],"safe":false,"lang":"de"}' },
      { headers: { ...AUTH, 'content-type': 'text/plain' }, raw: '{"query":"x"}' },
      { raw: JSON.stringify({ query: 'x', pad: 'a'.repeat(10 * 1024 * 1024 + 10) }) },
      { method: 'GET', url: '/v2/crawl/active', headers: AUTH },
      { method: 'GET', url: '/v1/crawl/active', headers: AUTH },
    ],
  },
  {
    name: 'threat protection and credits',
    options: {
      keys: [
        { key: 'fc-sandbox', team: 'plain', credits: 1000 },
        { key: 'k-tp', team: 'tp', credits: 1000, threatProtection: true },
        { key: 'k-low', team: 'low', credits: 7 },
        { key: 'k-zero', team: 'zero', credits: 0 },
      ],
    },
    requests: [
      { body: { query: 'x', threatProtection: { mode: 'normal' } } },
      { body: { query: 'x', scrapeOptions: { threatProtection: { mode: 'off' } } } },
      {
        headers: { authorization: 'Bearer k-tp' },
        body: { query: 'x', threatProtection: { mode: 'normal' } },
      },
      {
        headers: { authorization: 'Bearer k-tp' },
        body: {
          query: 'y',
          limit: 4,
          threatProtection: { mode: 'normal', blacklist: [' A.com '] },
        },
      },
      {
        headers: { authorization: 'Bearer k-tp' },
        body: { query: 'z', threatProtection: { mode: 'off' } },
      },
      {
        headers: { authorization: 'Bearer k-low' },
        body: { query: 'low', limit: 50, sources: ['web', 'news'] },
      },
      {
        headers: { authorization: 'Bearer k-low' },
        body: { query: 'low', limit: 20, scrapeOptions: { formats: ['markdown'] } },
      },
      { headers: { authorization: 'Bearer k-low' }, body: { query: 'low no limit' } },
      { headers: { authorization: 'Bearer k-low' }, body: { query: 'low', limit: 1 } },
      { headers: { authorization: 'Bearer k-low' }, body: { query: 'low', limit: 1 } },
      { headers: { authorization: 'Bearer k-low' }, body: { query: 'low', limit: 1 } },
      { headers: { authorization: 'Bearer k-zero' }, body: { query: 'x' } },
      { headers: { authorization: 'Bearer k-zero' }, raw: 'not json' },
    ],
  },
  {
    name: 'rate limit',
    options: { rateLimitPerMinute: 3 },
    requests: range(6).map((n) => ({ body: { query: `rate ${n}`, limit: 2 } })),
  },
  {
    name: 'rate limit with Retry-After',
    options: { rateLimitPerMinute: 1, retryAfterHeader: true },
    requests: [{ body: { query: 'a' } }, { body: { query: 'b', limit: 'x' } }],
  },
  {
    name: 'faults',
    options: { seed: 7, faults: { timeout408: 0.15, error500: 0.15, malformed: 0.15 } },
    requests: range(40).map((n) => ({ body: { query: `fault ${n}`, limit: 1 + (n % 5) } })),
  },
  {
    name: 'latency over the request timeout',
    options: { latency: { minMs: 5, maxMs: 5 } },
    requests: [{ body: { query: 'slow', timeout: 1 } }, { body: { query: 'slow', timeout: 1000 } }],
  },
];

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/;
const DROPPED_HEADERS = new Set(['date', 'connection', 'keep-alive']);

/**
 * The answer with its per-answer random parts checked and replaced: the search id (a UUIDv7 of
 * the fixed clock), exception ids (UUIDv7) and media signatures (64 hex digits).
 */
export function normalise(text: string): string {
  return text
    .replace(new RegExp(`"id":"(${UUID.source})"`, 'g'), (_m, id: string) => {
      const ms = Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
      return ms === NOW_MS ? '"id":"<uuidv7>"' : `"id":"<uuidv7 of ${ms}>"`;
    })
    .replace(new RegExp(`Your exception ID is ${UUID.source}`, 'g'), 'Your exception ID is <uuid>')
    .replace(/X-Goog-Signature=[0-9a-f]{64}/g, 'X-Goog-Signature=<signature>');
}

/** Runs a scenario in a fresh sandbox and returns what it answered. */
export async function runScenario(scenario: GoldenScenario): Promise<GoldenRecord> {
  const app: SandboxApp = buildSandboxApp({ ...scenario.options, now: () => NOW_MS });
  try {
    const answers: GoldenAnswer[] = [];
    for (const request of scenario.requests) {
      for (let i = 0; i < (scenario.twice ? 2 : 1); i++) {
        answers.push(await send(app, request, scenario.digests === true));
      }
    }
    return { name: scenario.name, answers, ledger: app.sandbox.ledger() };
  } finally {
    await app.close();
  }
}

async function send(
  app: SandboxApp,
  request: GoldenRequest,
  digest: boolean,
): Promise<GoldenAnswer> {
  const method = request.method ?? 'POST';
  const res = await app.inject({
    method,
    url: request.url ?? '/v2/search',
    headers:
      method === 'GET'
        ? (request.headers ?? AUTH)
        : { 'content-type': 'application/json', ...(request.headers ?? AUTH) },
    ...(method === 'GET' ? {} : { payload: request.raw ?? JSON.stringify(request.body) }),
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (!DROPPED_HEADERS.has(name)) headers[name] = String(value);
  }
  const answer: GoldenAnswer = { status: res.statusCode, headers };
  const text = normalise(res.body);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (json !== undefined && JSON.stringify(json) === text) answer.json = json;
  else answer.text = text;
  if (digest) {
    const sha256 = createHash('sha256').update(JSON.stringify(answer)).digest('hex');
    return { status: answer.status, headers: {}, sha256 };
  }
  const media = [...res.body.matchAll(/"(https?:\/\/[^"]*\/media\/[^"]*)"/g)].map((m) => m[1]!);
  if (media.length > 0) {
    answer.media = [];
    for (const url of media) {
      const { pathname, search } = new URL(url);
      answer.media.push((await app.inject({ method: 'GET', url: pathname + search })).statusCode);
    }
  }
  return answer;
}
