/**
 * `harvest crawls active|preview` against the sandbox on port 0: the binary in a child
 * process for output, exit codes and team scoping; the library in this process for retries,
 * with faults and a sandbox clock the test moves.
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { RateLimitedError, ServerError } from '../../src/api/errors.ts';
import { loadSettings, type Settings } from '../../src/config.ts';
import {
  ActiveCrawlsResponseV2Schema,
  type ActiveCrawlV2,
  V1_SCRAPE_DEFAULTS,
} from '../../src/contract/index.ts';
import { listActiveCrawls, previewCrawl, type RetryNotice } from '../../src/crawls/index.ts';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.ts';
import { useCleanup } from '../helpers/cleanup.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const KEYS = [
  { key: 'fc-alpha-key', team: 'alpha', credits: 1000 },
  { key: 'fc-beta-key', team: 'beta', credits: 1000 },
];
const defer = useCleanup();

async function sandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const box = await startSandbox({ port: 0, keys: KEYS, ...options });
  defer(() => box.close());
  return box;
}

function settingsFor(apiUrl: string, apiKey = 'fc-alpha-key'): Settings {
  return loadSettings({ HARVEST_API_URL: apiUrl, HARVEST_API_KEY: apiKey, LOG_LEVEL: 'silent' });
}

/** The sandbox's own v2 listing for a key, fetched without harvest. */
async function listing(box: RunningSandbox, key: string): Promise<ActiveCrawlV2[]> {
  const response = await fetch(`${box.url}/v2/crawl/active`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return ActiveCrawlsResponseV2Schema.parse(await response.json()).crawls;
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function harvest(args: string[], env: Record<string, string>): Promise<Outcome> {
  const run = promisify(execFile);
  try {
    const { stdout, stderr } = await run('node', ['bin/harvest.js', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

const envFor = (box: RunningSandbox, key = 'fc-alpha-key') => ({
  HARVEST_API_URL: box.url,
  HARVEST_API_KEY: key,
});

describe('harvest crawls active', () => {
  it("lists the key's team's crawls only, in both API versions", async () => {
    const box = await sandbox();
    const alpha = await listing(box, 'fc-alpha-key');
    const beta = await listing(box, 'fc-beta-key');
    expect(alpha.length).toBeGreaterThan(0);
    const betaIds = new Set(beta.map((c) => c.id));
    expect(alpha.some((c) => betaIds.has(c.id))).toBe(false);

    // independent runs of the binary, side by side
    const [human, v1, other] = await Promise.all([
      harvest(['crawls', 'active'], envFor(box)),
      harvest(['crawls', 'active', '--api-version', 'v1', '--json'], envFor(box)),
      harvest(['crawls', 'active', '--json'], envFor(box, 'fc-beta-key')),
    ]);
    expect(human.code).toBe(0);
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`${alpha.length} active crawls of team alpha (API v2)`);
    expect(lines[1]).toMatch(/^ID +STARTED +LIMIT +DEPTH +FORMATS +URL$/);
    expect(lines.slice(2).map((line) => line.split(' ')[0])).toEqual(alpha.map((c) => c.id));
    for (const id of betaIds) expect(human.stdout).not.toContain(id);

    for (const [out, version, team, crawls] of [
      [v1, 'v1', 'alpha', alpha],
      [other, 'v2', 'beta', beta],
    ] as const) {
      expect(out.code).toBe(0);
      const body = JSON.parse(out.stdout) as {
        ok: boolean;
        apiVersion: string;
        crawls: ActiveCrawlV2[];
      };
      expect(body.ok).toBe(true);
      expect(body.apiVersion).toBe(version);
      expect(body.crawls.map((c) => c.id)).toEqual(crawls.map((c) => c.id));
      expect(body.crawls.every((c) => c.teamId === team)).toBe(true);
    }
  });

  it('shows v1 records in the v2 shape, with the v1 defaults written out', async () => {
    const box = await sandbox();
    const v2 = await listActiveCrawls(settingsFor(box.url), { apiVersion: 'v2' });
    const v1 = await listActiveCrawls(settingsFor(box.url), { apiVersion: 'v1' });
    expect(v1.crawls.map((c) => c.id)).toEqual(v2.crawls.map((c) => c.id));
    v1.crawls.forEach((crawl, i) => {
      const { scrapeOptions: v1Scrape, ...v1Crawl } = crawl.options;
      const { scrapeOptions: v2Scrape, ...v2Crawl } = v2.crawls[i]!.options;
      // crawl options: maxDepth, ignoreSitemap, allowBackwardCrawling in their v2 names
      expect(v1Crawl).toEqual(v2Crawl);
      for (const name of ['parsePDF', 'jsonOptions', 'changeTrackingOptions']) {
        expect(v1Scrape).not.toHaveProperty(name);
      }
      expect(v1Scrape?.parsers).toEqual(v2Scrape?.parsers);
      expect(v1Scrape).toMatchObject(V1_SCRAPE_DEFAULTS);
      const json = (v1Scrape!.formats as unknown[]).find(
        (f) => typeof f === 'object' && (f as { type: string }).type === 'json',
      );
      const v2Json = (v2Scrape!.formats as { type: string }[]).find((f) => f.type === 'json');
      expect(json).toEqual(v2Json);
    });
  });

  it('takes v1 answers that already use v2 names as they are', async () => {
    const record = {
      id: '4f1c2a9e-8b7d-4c3a-9e2f-1a2b3c4d5e6f',
      teamId: 'alpha',
      url: 'https://example.com',
      options: {
        maxDiscoveryDepth: 2,
        scrapeOptions: { formats: [{ type: 'markdown' }], parsers: ['pdf'], timeout: 60_000 },
      },
    };
    // The sandbox answers v1 in v1 names only; the hosted service may not (api-notes).
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: true, crawls: [record] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    defer(() => new Promise((resolve) => server.close(resolve)));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const result = await listActiveCrawls(settingsFor(url), { apiVersion: 'v1' });
    expect(result.crawls).toEqual([record]);
  });

  it("waits the server's time after a 429 and then answers", async () => {
    let windows = 0;
    const startMs = Math.floor(Date.now() / 60_000) * 60_000 + 59_000; // 1 s before a new minute
    const box = await sandbox({ rateLimitPerMinute: 1, now: () => startMs + windows * 1000 });
    await listing(box, 'fc-alpha-key'); // the minute's one request
    const notices: RetryNotice[] = [];
    const began = Date.now();
    const result = await listActiveCrawls(settingsFor(box.url), {
      apiVersion: 'v2',
      retry: {
        onRetry: (notice) => {
          notices.push(notice);
          windows += 1; // the sandbox's clock moves into the next minute during the wait
        },
      },
    });
    expect(result.crawls.length).toBeGreaterThan(0);
    expect(notices).toHaveLength(1);
    expect(notices[0]!.error).toBeInstanceOf(RateLimitedError);
    expect(notices[0]!.waitMs).toBe(1000);
    expect(Date.now() - began).toBeGreaterThanOrEqual(1000);
    expect(box.ledger().teams.alpha!.calls).toEqual({ '200': 2, '429': 1 });
  });

  it('retries a 500 and gives up after its attempts with the last error', async () => {
    const box = await sandbox({ faults: { error500: 1 } });
    const retry = { baseDelayMs: 5, maxAttempts: 3 };
    const error = await listActiveCrawls(settingsFor(box.url), { apiVersion: 'v2', retry }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ServerError);
    expect(box.ledger().teams.alpha!.calls).toEqual({ '500': 3 });
    const healed = await listActiveCrawls(settingsFor(box.url), {
      apiVersion: 'v2',
      retry: { ...retry, onRetry: () => box.control.setFaults({}) },
    });
    expect(healed.crawls.length).toBeGreaterThan(0);
    expect(box.ledger().teams.alpha!.calls).toEqual({ '500': 4, '200': 1 });
  });

  it('exits 3 on a rejected key and 2 on a missing one, with JSON for --json', async () => {
    const box = await sandbox();
    const [denied, missing] = await Promise.all([
      harvest(['crawls', 'active', '--json'], envFor(box, 'fc-nobody')),
      harvest(['crawls', 'active'], { HARVEST_API_URL: box.url }),
    ]);
    expect(denied.code).toBe(3);
    expect(JSON.parse(denied.stdout).error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    expect(denied.stderr).toBe(
      'harvest: GET /v2/crawl/active: HTTP 401: Unauthorized: Invalid token\n',
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^harvest: HARVEST_API_KEY is not set/);
  });
});

describe('harvest crawls preview', () => {
  it('prints the options the service suggests for a prompt', async () => {
    const box = await sandbox();
    const args = [
      'crawls',
      'preview',
      '--url',
      'https://docs.example.com',
      '--prompt',
      'the docs and the blog, not the careers pages, 200 pages, depth 3',
    ];
    const [human, json] = await Promise.all([
      harvest(args, envFor(box)),
      harvest([...args, '--json'], envFor(box)),
    ]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatchInlineSnapshot(`
      "suggested crawl of https://docs.example.com
        includePaths       /docs/.*, /blog/.*
        excludePaths       /careers/.*
        limit              200
        maxDiscoveryDepth  3
      "
    `);
    expect(JSON.parse(json.stdout)).toEqual({
      ok: true,
      url: 'https://docs.example.com',
      prompt: 'the docs and the blog, not the careers pages, 200 pages, depth 3',
      suggested: {
        url: 'https://docs.example.com',
        includePaths: ['/docs/.*', '/blog/.*'],
        excludePaths: ['/careers/.*'],
        limit: 200,
        maxDiscoveryDepth: 3,
      },
    });
  });

  it('refuses a start URL that is not http(s) before calling the service', async () => {
    const box = await sandbox();
    const out = await harvest(
      ['crawls', 'preview', '--url', 'docs.example.com', '--prompt', 'docs', '--json'],
      envFor(box),
    );
    expect(out.code).toBe(2);
    expect(JSON.parse(out.stdout)).toEqual({
      ok: false,
      error: {
        code: 'USAGE',
        message:
          '--url must be an absolute http(s) URL such as https://example.com (received "docs.example.com")',
        exitCode: 2,
      },
    });
    expect(box.ledger().teams.alpha?.calls ?? {}).toEqual({});
  });

  it("exits 2 with the service's reason when it refuses the request (400), without retrying", async () => {
    const box = await sandbox();
    const url = 'https://example.com';
    const [tooLong, empty, absent] = await Promise.all([
      harvest(['crawls', 'preview', '--url', url, '--prompt', 'x'.repeat(10_001)], envFor(box)),
      harvest(['crawls', 'preview', '--url', url, '--prompt', '', '--json'], envFor(box)),
      harvest(['crawls', 'preview', '--url', url, '--json'], envFor(box)),
    ]);
    expect(tooLong.code).toBe(2);
    expect(tooLong.stdout).toBe('');
    expect(tooLong.stderr).toMatch(
      /^harvest: POST \/v2\/crawl\/params-preview: HTTP 400 BAD_REQUEST: Invalid request parameters: prompt: .*10000/,
    );
    expect(empty.code).toBe(2);
    expect(JSON.parse(empty.stdout).error).toMatchObject({
      code: 'BAD_REQUEST',
      status: 400,
      exitCode: 2,
    });
    expect(box.ledger().teams.alpha!.calls).toEqual({ '400': 2 });
    expect(absent.code).toBe(2);
    expect(JSON.parse(absent.stdout).error.message).toContain("'--prompt <text>' not specified");
  });

  it('previews in process too, through the same retry', async () => {
    const box = await sandbox({ faults: { timeout408: 1 } });
    const preview = await previewCrawl(settingsFor(box.url), {
      url: 'https://example.com',
      prompt: 'the whole site',
      retry: { baseDelayMs: 5, onRetry: () => box.control.setFaults({}) },
    });
    expect(preview.suggested).toEqual({ url: 'https://example.com', crawlEntireDomain: true });
    expect(box.ledger().teams.alpha!.calls).toEqual({ '408': 1, '200': 1 });
  });
});
