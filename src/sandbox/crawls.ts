/**
 * Active crawls (seeded per team: 2 to 4 each, deterministic) in the v2 and v1 record shapes,
 * and the params-preview heuristic that turns a prompt into suggested crawl options.
 */

import { createRandom } from './faults.ts';
import { seededUuid } from './ids.ts';
import { seedOf } from './request-key.ts';

const SITES = [
  'https://docs.example.com',
  'https://blog.example.org',
  'https://www.example.net/shop',
  'https://news.example.com',
  'https://help.example.io',
];

interface SeededCrawl {
  id: string;
  teamId: string;
  url: string;
  created_at: string;
  limit: number;
  maxDepth: number;
  formats: string[];
  json: boolean;
  parsePdf: boolean;
}

function seededCrawls(team: string, seed: number): SeededCrawl[] {
  const random = createRandom(seedOf(`${seed}\ncrawls\n${team}`));
  const count = 2 + Math.floor(random() * 3);
  return Array.from({ length: count }, (_, i) => {
    const url = SITES[Math.floor(random() * SITES.length)]!;
    return {
      id: seededUuid(`${seed}\n${team}\ncrawl ${i}`),
      teamId: team,
      url,
      created_at: new Date(
        Date.UTC(2026, 0, 1) + Math.floor(random() * 30 * 86_400_000),
      ).toISOString(),
      limit: 10 * (1 + Math.floor(random() * 50)),
      maxDepth: 1 + Math.floor(random() * 5),
      formats: random() < 0.5 ? ['markdown'] : ['markdown', 'links'],
      json: random() < 0.4,
      parsePdf: random() < 0.7,
    };
  });
}

const JSON_SCHEMA = {
  type: 'object',
  properties: { title: { type: 'string' }, price: { type: 'number' } },
};

/** v2 records: scrape options in v2 names and defaults. */
export function activeCrawlsV2(team: string, seed: number): Record<string, unknown>[] {
  return seededCrawls(team, seed).map((c) => ({
    id: c.id,
    teamId: c.teamId,
    url: c.url,
    created_at: c.created_at,
    options: {
      limit: c.limit,
      maxDiscoveryDepth: c.maxDepth,
      crawlEntireDomain: false,
      sitemap: 'include',
      scrapeOptions: {
        formats: [
          ...c.formats.map((type) => ({ type })),
          ...(c.json ? [{ type: 'json', prompt: 'Extract the product', schema: JSON_SCHEMA }] : []),
        ],
        onlyMainContent: true,
        onlyCleanContent: false,
        maxAge: 172_800_000,
        waitFor: 0,
        mobile: false,
        skipTlsVerification: true,
        timeout: 60_000,
        parsers: c.parsePdf ? ['pdf'] : [],
        removeBase64Images: true,
        blockAds: true,
        proxy: 'auto',
        storeInCache: true,
        lockdown: false,
        redactPII: false,
      },
    },
  }));
}

/** v1 records: the v1 scrape-option names (parsePDF, jsonOptions, ...) and v1 defaults. */
export function activeCrawlsV1(team: string, seed: number): Record<string, unknown>[] {
  return seededCrawls(team, seed).map((c) => ({
    id: c.id,
    teamId: c.teamId,
    url: c.url,
    created_at: c.created_at,
    options: {
      limit: c.limit,
      maxDepth: c.maxDepth,
      allowBackwardCrawling: false,
      ignoreSitemap: false,
      scrapeOptions: {
        formats: [...c.formats, ...(c.json ? ['json'] : [])],
        onlyMainContent: true,
        maxAge: 0,
        waitFor: 0,
        mobile: false,
        skipTlsVerification: false,
        timeout: 30_000,
        parsePDF: c.parsePdf,
        ...(c.json
          ? {
              jsonOptions: {
                schema: JSON_SCHEMA,
                systemPrompt: 'You extract product data.',
                prompt: 'Extract the product',
              },
            }
          : {}),
        removeBase64Images: true,
        blockAds: true,
        proxy: 'basic',
        storeInCache: true,
      },
    },
  }));
}

/**
 * Suggested crawl options from a prompt. Heuristic, documented for users of the sandbox:
 * - path words (blog, docs, news, products, ...) -> `includePaths: ['/<word>/.*']`;
 * - "not"/"except"/"exclude"/"without" followed by such a word -> `excludePaths` instead;
 * - the first number -> `limit` (pages);
 * - "entire", "whole", "all of" -> `crawlEntireDomain: true`;
 * - "sitemap only" / "only the sitemap" -> `sitemap: 'only'`; "skip/ignore/no sitemap" -> 'skip';
 * - "depth N" / "N levels" -> `maxDiscoveryDepth: N`; "subdomains" -> `allowSubdomains: true`.
 */
export function previewParams(url: string, prompt: string): Record<string, unknown> {
  const text = prompt.toLowerCase();
  const out: Record<string, unknown> = { url };
  const include: string[] = [];
  const exclude: string[] = [];
  const sections =
    /\b(not|except|exclude|excluding|without|skip)?\s*(?:the\s+)?(blog|docs|documentation|news|products?|pricing|careers|api|guides?|changelog|support)\b/g;
  for (const m of text.matchAll(sections)) {
    const word = m[2] === 'documentation' ? 'docs' : m[2]!;
    (m[1] ? exclude : include).push(`/${word}/.*`);
  }
  if (include.length > 0) out.includePaths = [...new Set(include)];
  if (exclude.length > 0) out.excludePaths = [...new Set(exclude)];
  const depth = /\b(?:depth\s+(\d+)|(\d+)\s+levels?)\b/.exec(text);
  if (depth) out.maxDiscoveryDepth = Number(depth[1] ?? depth[2]);
  const withoutDepth = depth ? text.replace(depth[0], ' ') : text;
  const limit = /\b(\d{1,6})\b/.exec(withoutDepth);
  if (limit) out.limit = Number(limit[1]);
  if (/\b(entire|whole|all of)\b/.test(text)) out.crawlEntireDomain = true;
  if (/\bsitemap only\b|\bonly (?:the )?sitemap\b/.test(text)) out.sitemap = 'only';
  else if (/\b(?:skip|ignore|no|without)(?: the)? sitemap\b/.test(text)) out.sitemap = 'skip';
  if (/\bsubdomains?\b/.test(text)) out.allowSubdomains = true;
  return out;
}
