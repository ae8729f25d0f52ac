import { afterEach, describe, expect, it } from 'vitest';
import {
  ERROR_MESSAGES,
  INTEGRATION_MESSAGE,
  RATE_LIMIT_RETRY_AFTER_PATTERN,
  rateLimitMessage,
  SearchRequestSchema,
} from '../../../src/contract/index.ts';
import { conformanceCases } from '../../helpers/conformance.ts';
import { AUTH, app, search } from './helpers.ts';

let sandbox: ReturnType<typeof app>;
afterEach(async () => {
  await sandbox?.close();
});

describe('error answers of POST /v2/search', () => {
  it('401 without a header, with an empty bearer token or none after "Bearer", with WWW-Authenticate', async () => {
    sandbox = app();
    // `Bearerk0`: the hosted service takes the token after a space, and finds none.
    for (const headers of [
      {},
      { authorization: 'Bearer ' },
      { authorization: `Bearer${AUTH.authorization.slice(7)}` },
    ]) {
      const res = await search(sandbox, { query: 'x' }, headers as typeof AUTH);
      expect(res.status).toBe(401);
      expect(res.body).toBe('{"success":false,"error":"Unauthorized: Token missing"}');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
    }
  });

  it('401 for an unknown key', async () => {
    sandbox = app();
    const res = await search(sandbox, { query: 'x' }, { authorization: 'Bearer fc-nope' });
    expect(res.status).toBe(401);
    expect(res.body).toBe('{"success":false,"error":"Unauthorized: Invalid token"}');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer .*invalid_token/);
  });

  it('checks auth before the body: malformed JSON without a key is a 401', async () => {
    sandbox = app();
    const res = await sandbox.inject({
      method: 'POST',
      url: '/v2/search',
      headers: { 'content-type': 'application/json' },
      payload: '{"query":',
    });
    expect(res.statusCode).toBe(401);
  });

  it('400 BAD_REQUEST_INVALID_JSON for malformed JSON', async () => {
    sandbox = app();
    const res = await sandbox.inject({
      method: 'POST',
      url: '/v2/search',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: '{"query": "x",',
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toBe(
      '{"success":false,"code":"BAD_REQUEST_INVALID_JSON","error":"Bad request, malformed JSON"}',
    );
  });

  it('400 Invalid request body with zod issues in details', async () => {
    sandbox = app();
    const res = await search(sandbox, { query: 'x', limit: '10', bogus: 1 });
    expect(res.status).toBe(400);
    const body = res.json();
    expect(body.success).toBe(false);
    expect(body.error).toBe('Invalid request body');
    expect(body.details.map((d: { path: unknown[] }) => d.path)).toEqual(
      expect.arrayContaining([['limit']]),
    );
    for (const d of body.details)
      expect(d).toMatchObject({ code: expect.any(String), message: expect.any(String) });
  });

  it('accepts the origin field real clients send', async () => {
    sandbox = app();
    const res = await search(sandbox, { query: 'hello', origin: 'js-sdk@4.42.0' });
    expect(res.status).toBe(200);
  });

  it("integration takes only the hosted service's names (400 naming them otherwise)", async () => {
    sandbox = app();
    for (const integration of ['n8n', 'zapier', '_internal-caller']) {
      expect((await search(sandbox, { query: 'hello', integration })).status).toBe(200);
    }
    const res = await search(sandbox, { query: 'hello', integration: 'my-app' });
    expect(res.status).toBe(400);
    expect(res.json().details).toEqual([
      { code: 'custom', path: ['integration'], message: INTEGRATION_MESSAGE },
    ]);
    expect(INTEGRATION_MESSAGE).toMatch(/^Invalid enum value\. Expected 'dify' \| 'zapier' \| /);
  });

  it('__agentInterop: 400 without its three fields, else 403 as for any outside caller', async () => {
    sandbox = app();
    const partial = await search(sandbox, {
      query: 'x',
      __agentInterop: { requestId: 'r', shouldBill: false },
    });
    expect(partial.status).toBe(400);
    expect(partial.json().details.map((d: { path: unknown[] }) => d.path)).toEqual([
      ['__agentInterop', 'auth'],
    ]);
    const full = await search(sandbox, {
      query: 'x',
      __agentInterop: { auth: 'guess', requestId: 'r', shouldBill: false },
    });
    expect(full.status).toBe(403);
    expect(full.body).toBe(
      JSON.stringify({ success: false, error: ERROR_MESSAGES.agentInteropInvalid }),
    );
    expect(sandbox.sandbox.ledger().teams.sandbox?.creditsCharged ?? 0).toBe(0);
  });

  it("rejects the hosted service's internal fields, at the top and in scrapeOptions", async () => {
    sandbox = app();
    for (const [body, path] of [
      [{ query: 'x', __searchPreviewToken: 't' }, []],
      [{ query: 'x', asyncScraping: true }, []],
      [{ query: 'x', scrapeOptions: { useMock: 'fixture' } }, ['scrapeOptions']],
      [{ query: 'x', scrapeOptions: { __experimental_omce: true } }, ['scrapeOptions']],
    ] as const) {
      const res = await search(sandbox, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json().details).toEqual([
        expect.objectContaining({ code: 'unrecognized_keys', path }),
      ]);
    }
  });

  it('413 for a body over 10 MB', async () => {
    sandbox = app();
    const res = await sandbox.inject({
      method: 'POST',
      url: '/v2/search',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: JSON.stringify({ query: 'x', pad: 'a'.repeat(10 * 1024 * 1024 + 10) }),
    });
    expect(res.statusCode).toBe(413);
    expect(res.body).toBe('{"success":false,"error":"Request body is too large"}');
  });

  it('402 when the balance is 0, before the body is read', async () => {
    sandbox = app({ keys: [{ key: 'k0', team: 'broke', credits: 0 }] });
    const res = await search(sandbox, 'not json at all', { authorization: 'Bearer k0' });
    expect(res.status).toBe(402);
    expect(res.body).toBe(
      JSON.stringify({ success: false, error: ERROR_MESSAGES.insufficientCredits }),
    );
  });

  it('403 for threatProtection on a team without the feature, 200 with it', async () => {
    sandbox = app({
      keys: [
        { key: 'k1', team: 'plain', credits: 1000 },
        { key: 'k2', team: 'tp', credits: 1000, threatProtection: true },
      ],
    });
    const body = { query: 'x', threatProtection: { mode: 'normal' } };
    const denied = await search(sandbox, body, { authorization: 'Bearer k1' });
    expect(denied.status).toBe(403);
    expect(denied.body).toBe(
      JSON.stringify({ success: false, error: ERROR_MESSAGES.threatProtectionNotEnabled }),
    );
    const allowed = await search(sandbox, body, { authorization: 'Bearer k2' });
    expect(allowed.status).toBe(200);
  });

  it('408 SCRAPE_TIMEOUT when the simulated work exceeds the request timeout', async () => {
    sandbox = app({ latency: { minMs: 200, maxMs: 200 } });
    const res = await search(sandbox, { query: 'x', timeout: 20 });
    expect(res.status).toBe(408);
    expect(res.json()).toEqual({
      success: false,
      code: 'SCRAPE_TIMEOUT',
      error: ERROR_MESSAGES.scrapeTimeout,
    });
    const ok = await search(sandbox, { query: 'x', timeout: 1000 });
    expect(ok.status).toBe(200);
  });

  it('500 UNKNOWN_ERROR with an exception id as an injected fault', async () => {
    sandbox = app({ faults: { error500: 1 } });
    const res = await search(sandbox, { query: 'x' });
    expect(res.status).toBe(500);
    const body = res.json();
    expect(body).toMatchObject({ success: false, code: 'UNKNOWN_ERROR' });
    expect(body.error).toMatch(
      /^An unexpected error occurred\. .*Your exception ID is [0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(sandbox.sandbox.ledger().teams.sandbox?.creditsCharged).toBe(0);
  });

  it('429 with the real message, retry-after from the fixed minute window, no headers', async () => {
    let nowMs = Date.UTC(2026, 10, 22, 10, 14, 33);
    sandbox = app({ rateLimitPerMinute: 2, now: () => nowMs });
    expect((await search(sandbox, { query: 'a' })).status).toBe(200);
    expect((await search(sandbox, { query: 'b' })).status).toBe(200);
    const res = await search(sandbox, { query: 'not even valid', limit: 'x' });
    expect(res.status).toBe(429);
    const message = rateLimitMessage({
      consumed: 3,
      remaining: 0,
      retryAfterS: 27,
      resetsAt: new Date(Date.UTC(2026, 10, 22, 10, 15, 0)),
    });
    expect(res.body).toBe(JSON.stringify({ success: false, error: message }));
    expect(RATE_LIMIT_RETRY_AFTER_PATTERN.exec(res.json().error)?.[1]).toBe('27');
    expect(res.headers['retry-after']).toBeUndefined();
    expect(Object.keys(res.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
    nowMs += 27_000; // the next window
    expect((await search(sandbox, { query: 'c' })).status).toBe(200);
  });

  it('429 carries Retry-After with the option', async () => {
    sandbox = app({
      rateLimitPerMinute: 1,
      retryAfterHeader: true,
      now: () => Date.UTC(2026, 0, 1, 0, 0, 50),
    });
    await search(sandbox, { query: 'a' });
    const res = await search(sandbox, { query: 'a' });
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('10');
  });

  it('auth, credits and rate limit apply to crawl endpoints', async () => {
    sandbox = app({ keys: [{ key: 'k0', team: 'broke', credits: 0 }], rateLimitPerMinute: 1 });
    expect((await sandbox.inject({ method: 'GET', url: '/v2/crawl/active' })).statusCode).toBe(401);
    const headers = { authorization: 'Bearer k0' };
    expect(
      (await sandbox.inject({ method: 'GET', url: '/v1/crawl/active', headers })).statusCode,
    ).toBe(402);
    expect(
      (await sandbox.inject({ method: 'GET', url: '/v2/crawl/active', headers })).statusCode,
    ).toBe(429);
  });
});

describe('hostedRules: what the hosted service refuses beyond the reference', () => {
  const accepted = conformanceCases.filter((c) => SearchRequestSchema.safeParse(c.body).success);

  it.each(accepted.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    sandbox = app({ hostedRules: true, threatProtectionTeams: ['sandbox'] });
    const res = await search(sandbox, c.body);
    if (c.hosted_service === 'valid') {
      // A valid __agentInterop passes validation; the service then refuses a caller that is
      // not one of its own agents.
      const interop = typeof c.body === 'object' && c.body !== null && '__agentInterop' in c.body;
      expect(res.status).toBe(interop ? 403 : 200);
      return;
    }
    expect(res.status).toBe(400);
    const body = res.json() as { success: boolean; error: string; details: { path: unknown[] }[] };
    expect(body.success).toBe(false);
    expect(body.error).toBe(ERROR_MESSAGES.invalidBody);
    expect(body.details.map((d) => d.path.join('.'))).toEqual(
      expect.arrayContaining(c.hosted_service_error_paths ?? []),
    );
  });

  it('is off by default: the reference alone decides', async () => {
    sandbox = app();
    const res = await search(sandbox, { query: 'x', scrapeOptions: { waitFor: 60_001 } });
    expect(res.status).toBe(200);
  });
});
