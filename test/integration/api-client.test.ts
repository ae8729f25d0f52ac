/**
 * The API client against real HTTP servers on port 0: a small node:http server made here for
 * exact wire cases (and cases the sandbox cannot produce), and the sandbox for the service's
 * own answers.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ApiClient,
  type ApiError,
  BadRequestError,
  BadResponseError,
  createApiClient,
  NetworkError,
  PaymentRequiredError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from '../../src/api/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.ts';

const KEY = 'fc-test-key-0123456789abcdef';
const SEARCH_OK = {
  success: true,
  data: { web: [{ url: 'https://example.com/', title: 'Example', description: 'An example' }] },
  creditsUsed: 2,
  id: '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
};

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

interface TestServer {
  url: string;
  received: Received[];
  connections: number;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function serve(handler: Handler): Promise<TestServer> {
  const received: Received[] = [];
  const state = { connections: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.on('connection', () => {
    state.connections++;
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const result: TestServer = {
    url: `http://127.0.0.1:${port}`,
    received,
    get connections() {
      return state.connections;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  cleanups.push(result.close);
  return result;
}

function client(baseUrl: string, options: { timeoutSlackMs?: number } = {}): ApiClient {
  const api = createApiClient({ baseUrl, apiKey: KEY, ...options });
  cleanups.push(() => api.close());
  return api;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** Runs `call`, expects it to throw an ApiError, checks the key never leaks, returns it. */
async function failure(call: () => Promise<unknown>): Promise<ApiError> {
  let caught: unknown;
  try {
    await call();
  } catch (error) {
    caught = error;
  }
  expect(caught, 'the call should have failed').toBeInstanceOf(Error);
  const error = caught as ApiError;
  expect(error.message).not.toContain(KEY);
  expect(error.stack ?? '').not.toContain(KEY);
  expect(JSON.stringify(error)).not.toContain(KEY);
  expect(typeof error.code).toBe('string');
  return error;
}

describe('api client against a node:http server', () => {
  it('sends the search with the bearer key and returns the validated body', async () => {
    const server = await serve((_req, res) =>
      sendJson(res, 200, { ...SEARCH_OK, extraField: 'kept' }, { 'x-request-id': 'abc' }),
    );
    const api = client(`${server.url}/prefix/`);
    const request = { query: 'harvest test', limit: 3 };
    const response = await api.search(request);

    expect(response.status).toBe(200);
    expect(response.durationMs).toBeGreaterThan(0);
    expect(response.body.creditsUsed).toBe(2);
    expect(response.body.data.web?.[0]?.url).toBe('https://example.com/');
    expect((response.body as Record<string, unknown>).extraField).toBe('kept');
    expect(response.headers['x-request-id']).toBe('abc');

    const [sent] = server.received;
    expect(sent?.method).toBe('POST');
    expect(sent?.url).toBe('/prefix/v2/search');
    expect(sent?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(sent?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(sent?.body ?? '')).toEqual(request);
  });

  it('reuses kept-alive connections', async () => {
    const server = await serve((_req, res) => sendJson(res, 200, SEARCH_OK));
    const api = client(server.url);
    for (let i = 0; i < 20; i++) await api.search({ query: `q${i}` });
    expect(server.received).toHaveLength(20);
    // The pool may open a second connection while the first drains, but no more one after another.
    expect(server.connections).toBeLessThanOrEqual(2);
  });

  it('reads an HTTP-date Retry-After on a 429', async () => {
    const at = new Date(Date.now() + 120_000).toUTCString();
    const server = await serve((_req, res) =>
      sendJson(res, 429, { success: false, error: 'Rate limit exceeded.' }, { 'retry-after': at }),
    );
    const error = await failure(() => client(server.url).search({ query: 'q' }));
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.status).toBe(429);
    expect(error.retryAfterMs).toBeGreaterThan(115_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(120_000);
  });

  it('keeps the service code of a 500', async () => {
    const server = await serve((_req, res) =>
      sendJson(res, 500, {
        success: false,
        code: 'UNKNOWN_ERROR',
        error: 'An unexpected error occurred.',
      }),
    );
    const error = await failure(() => client(server.url).search({ query: 'q' }));
    expect(error).toBeInstanceOf(ServerError);
    expect(error.serviceCode).toBe('UNKNOWN_ERROR');
    expect(error.message).toBe(
      'POST /v2/search: HTTP 500 UNKNOWN_ERROR: An unexpected error occurred.',
    );
    expect(error.durationMs).toBeGreaterThan(0);
  });

  it('turns a refused connection into NetworkError', async () => {
    const server = await serve(() => {});
    const url = server.url;
    await server.close();
    const error = await failure(() => client(url).search({ query: 'q' }));
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.status).toBeUndefined();
  });

  it('turns a dropped connection into NetworkError', async () => {
    const server = await serve((req) => req.socket.destroy());
    const error = await failure(() => client(server.url).search({ query: 'q' }));
    expect(error).toBeInstanceOf(NetworkError);
  });

  it('turns a body cut short into NetworkError', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"success":true,');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const error = await failure(() => client(server.url).search({ query: 'q' }));
    expect(error).toBeInstanceOf(NetworkError);
  });

  it('times out after the request timeout plus the slack', async () => {
    const server = await serve(() => {}); // never answers
    const api = client(server.url, { timeoutSlackMs: 150 });
    const started = performance.now();
    const error = await failure(() => api.search({ query: 'q', timeout: 100 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.code).toBe('TIMEOUT');
    expect(error.status).toBeUndefined();
    expect(performance.now() - started).toBeGreaterThanOrEqual(200);
  });

  it('honours an explicit timeoutMs and an abort signal', async () => {
    const server = await serve(() => {});
    const api = client(server.url);
    expect(await failure(() => api.search({ query: 'q' }, { timeoutMs: 200 }))).toBeInstanceOf(
      TimeoutError,
    );
    const timedOut = await failure(() =>
      api.search({ query: 'q' }, { signal: AbortSignal.timeout(100) }),
    );
    expect(timedOut).toBeInstanceOf(TimeoutError);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const aborted = await failure(() => api.search({ query: 'q' }, { signal: controller.signal }));
    expect(aborted).toBeInstanceOf(NetworkError);
  });

  it.each([
    ['malformed JSON', '{"success":true,"data":'],
    ['an off-contract body', JSON.stringify({ success: true, data: {} })],
    ['success:false on 200', JSON.stringify({ success: false, error: 'odd' })],
    ['an array', '[]'],
  ])('turns a 200 with %s into BadResponseError', async (_name, body) => {
    const server = await serve((_req, res) => sendJson(res, 200, body));
    const error = await failure(() => client(server.url).search({ query: 'q' }));
    expect(error).toBeInstanceOf(BadResponseError);
    expect(error.status).toBe(200);
  });

  it('scrubs the key even when the service echoes it', async () => {
    const server = await serve((req, res) =>
      sendJson(res, 401, {
        success: false,
        error: `Unauthorized: Invalid token ${req.headers.authorization}`,
      }),
    );
    const error = await failure(() => client(server.url).search({ query: 'q' }));
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error.message).toContain('[redacted]');
  });

  it('normalises v1 active crawls to the v2 shape', async () => {
    const crawl = {
      id: '4f1c2a9e-8b7d-4c3a-9e2f-1a2b3c4d5e6f',
      teamId: 'team-1',
      url: 'https://example.com',
      options: { scrapeOptions: { formats: ['markdown'], parsePDF: true, maxAge: 0 } },
    };
    const server = await serve((_req, res) =>
      sendJson(res, 200, { success: true, crawls: [crawl] }),
    );
    const api = client(server.url);
    const v1 = await api.activeCrawls({ version: 'v1' });
    expect(server.received[0]?.url).toBe('/v1/crawl/active');
    expect(server.received[0]?.method).toBe('GET');
    expect(server.received[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    const options = v1.body.crawls[0]?.options.scrapeOptions;
    expect(options?.parsers).toEqual(['pdf']);
    expect(options?.parsePDF).toBeUndefined();
    const v2 = await api.activeCrawls({ version: 'v2' });
    expect(server.received[1]?.url).toBe('/v2/crawl/active');
    expect(v2.body.crawls[0]?.id).toBe(crawl.id);
  });

  it('posts a params preview', async () => {
    const server = await serve((_req, res) =>
      sendJson(res, 200, { success: true, data: { url: 'https://example.com', limit: 50 } }),
    );
    const response = await client(server.url).paramsPreview({
      url: 'https://example.com',
      prompt: 'only the blog',
    });
    expect(response.body.data.limit).toBe(50);
    expect(server.received[0]?.url).toBe('/v2/crawl/params-preview');
    expect(JSON.parse(server.received[0]?.body ?? '')).toEqual({
      url: 'https://example.com',
      prompt: 'only the blog',
    });
  });

  it('closes idempotently and fails calls after close with NetworkError', async () => {
    const server = await serve((_req, res) => sendJson(res, 200, SEARCH_OK));
    const api = createApiClient({ baseUrl: server.url, apiKey: KEY });
    await api.search({ query: 'q' });
    await Promise.all([api.close(), api.close()]);
    const error = await failure(() => api.search({ query: 'q' }));
    expect(error).toBeInstanceOf(NetworkError);
  });
});

describe('api client against the sandbox', () => {
  const TEAM = 'team-a';

  async function sandbox(
    options: Parameters<typeof startSandbox>[0] = {},
  ): Promise<RunningSandbox> {
    const running = await startSandbox({
      port: 0,
      keys: [{ key: KEY, team: TEAM, credits: 10_000 }],
      ...options,
    });
    cleanups.push(() => running.close());
    return running;
  }

  it('searches, and the credits it reports are what the sandbox billed', async () => {
    const box = await sandbox();
    const api = client(box.url);
    const response = await api.search({ query: 'vector databases', limit: 5 });
    expect(response.status).toBe(200);
    expect(response.body.success).toBe(true);
    expect(response.body.data.web?.length).toBeGreaterThan(0);
    expect(response.body.id).toEqual(expect.any(String));
    const team = box.ledger().teams[TEAM];
    expect(team?.calls['200']).toBe(1);
    expect(team?.creditsCharged).toBe(response.body.creditsUsed);
  });

  it('lists active crawls in v2 and v1, normalised to v2, and previews params', async () => {
    const box = await sandbox();
    const api = client(box.url);
    const v2 = await api.activeCrawls({ version: 'v2' });
    const v1 = await api.activeCrawls({ version: 'v1' });
    expect(v1.body.crawls.map((c) => c.id)).toEqual(v2.body.crawls.map((c) => c.id));
    for (const crawl of v1.body.crawls) {
      expect(crawl.options.scrapeOptions?.parsePDF).toBeUndefined();
      expect(crawl.options.scrapeOptions?.jsonOptions).toBeUndefined();
    }
    const preview = await api.paramsPreview({ url: 'https://example.com', prompt: 'the blog' });
    expect(preview.body.data.url).toEqual(expect.any(String));
  });

  it('answers an unknown key with UnauthorizedError', async () => {
    const box = await sandbox();
    const api = createApiClient({ baseUrl: box.url, apiKey: 'fc-not-a-real-key-42' });
    cleanups.push(() => api.close());
    const error = await failure(() => api.search({ query: 'q' }));
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error.status).toBe(401);
    expect(error.message).toBe('POST /v2/search: HTTP 401: Unauthorized: Invalid token');
    expect(error.message).not.toContain('fc-not-a-real-key-42');
  });

  it('answers an empty balance with PaymentRequiredError', async () => {
    const box = await sandbox();
    box.control.setCredits(KEY, 0);
    const error = await failure(() => client(box.url).search({ query: 'q' }));
    expect(error).toBeInstanceOf(PaymentRequiredError);
    expect(error.status).toBe(402);
    expect(error.message).toContain('Insufficient credits');
  });

  it('reads the wait of a 429 from the message text, or from Retry-After when sent', async () => {
    const box = await sandbox({ rateLimitPerMinute: 1 });
    const api = client(box.url);
    await api.search({ query: 'first' });
    const error = await failure(() => api.search({ query: 'second' }));
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.status).toBe(429);
    const seconds = Number(/retry after (\d+)s/.exec(error.message)?.[1]);
    expect(seconds).toBeGreaterThan(0);
    expect(error.retryAfterMs).toBe(seconds * 1000);

    box.control.setRateLimit({ perMinute: 1, retryAfterHeader: true });
    await api.search({ query: 'third' });
    const withHeader = await failure(() => api.search({ query: 'fourth' }));
    expect(withHeader).toBeInstanceOf(RateLimitedError);
    expect(withHeader.retryAfterMs).toBeGreaterThan(0);
    expect(withHeader.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it.each([
    ['timeout408', TimeoutError, 408],
    ['error500', ServerError, 500],
    ['malformed', BadResponseError, 200],
    ['drop', NetworkError, undefined],
  ] as const)('turns the %s fault into %o', async (fault, cls, status) => {
    const box = await sandbox({ faults: { [fault]: 1 } });
    const error = await failure(() => client(box.url).search({ query: 'q' }));
    expect(error).toBeInstanceOf(cls);
    expect(error.status).toBe(status);
    if (fault === 'timeout408') expect(error.serviceCode).toBe('SCRAPE_TIMEOUT');
    if (fault === 'error500') expect(error.serviceCode).toBe('UNKNOWN_ERROR');
  });

  it('answers 408 when simulated latency exceeds the request timeout', async () => {
    const box = await sandbox({ latency: { minMs: 300, maxMs: 300 } });
    const error = await failure(() => client(box.url).search({ query: 'q', timeout: 100 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.status).toBe(408);
  });

  it('keeps the details of an invalid body', async () => {
    const box = await sandbox();
    const error = await failure(() =>
      client(box.url).search({ query: 'q', limit: 1000 } as unknown as { query: string }),
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.status).toBe(400);
    expect((error as BadRequestError).details?.length).toBeGreaterThan(0);
  });
});
