/**
 * The sandbox against the official Python client's request shapes (firecrawl-py 4.x): each body
 * as the client builds it (see test/fixtures/python-sdk-search-requests.ts), sent over HTTP the
 * way the client sends it. The client adds `fastMode` to every scrape option set, so a contract
 * without it refuses every Python search that scrapes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SearchRequestSchema } from '../../src/contract/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.ts';
import { PYTHON_SDK_SEARCHES } from '../fixtures/python-sdk-search-requests.ts';

let sandbox: RunningSandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ port: 0 });
});
afterEach(async () => {
  await sandbox.close();
});

/** POST /v2/search with the client's headers (`HttpClient._prepare_headers`). */
async function post(body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${sandbox.url}/v2/search`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer fc-sandbox' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

type Item = { url?: unknown; markdown?: unknown; metadata?: { statusCode?: number } };

describe('the official Python client (firecrawl-py 4.x) against the sandbox', () => {
  it.each(PYTHON_SDK_SEARCHES.map((c) => [c.call, c] as const))('%s', async (_call, c) => {
    expect(SearchRequestSchema.safeParse(c.body).error?.issues).toBeUndefined();
    const { status, json } = await post(c.body);
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json).toMatchObject({ success: true, creditsUsed: expect.any(Number) });
    const data = json.data as Record<'web' | 'news' | 'images', Item[] | undefined>;
    const web = data.web ?? [];
    // Some rankings are empty by design (most of a query's sources still answer).
    const found = web.length + (data.news?.length ?? 0) + (data.images?.length ?? 0);
    expect(found).toBeGreaterThan(0);
    expect(web.length).toBeLessThanOrEqual(c.body.limit as number);
    const scraped = web.filter((item) => item.metadata?.statusCode === 200);
    if (c.scrapes) {
      expect(scraped.length).toBeGreaterThan(0);
      for (const item of scraped) expect(item.markdown).toEqual(expect.any(String));
    } else {
      expect(web.every((item) => item.markdown === undefined)).toBe(true);
    }
  });

  it('every Python search with scrape options carries fastMode', () => {
    const withOptions = PYTHON_SDK_SEARCHES.filter((c) => c.body.scrapeOptions);
    expect(withOptions.length).toBeGreaterThan(0);
    for (const c of withOptions) {
      expect(c.body.scrapeOptions).toHaveProperty('fastMode', expect.any(Boolean));
    }
  });

  it('still refuses what the hosted service refuses in the same shapes', async () => {
    const [, , scraping] = PYTHON_SDK_SEARCHES;
    const options = scraping!.body.scrapeOptions as Record<string, unknown>;
    for (const [body, path] of [
      [
        { ...scraping!.body, scrapeOptions: { ...options, fastMode: 'false' } },
        'scrapeOptions.fastMode',
      ],
      [{ ...scraping!.body, scrapeOptions: { ...options, useMock: 'x' } }, 'scrapeOptions'],
      [{ ...scraping!.body, integration: 'my-app' }, 'integration'],
    ] as const) {
      const { status, json } = await post(body);
      expect(status).toBe(400);
      expect((json.details as { path: unknown[] }[]).map((d) => d.path.join('.'))).toEqual([path]);
    }
  });
});
