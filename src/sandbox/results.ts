/**
 * Deterministic search results, ranked like a search engine's: each source has one ranking per
 * query, filters and source options, and a request answers its top `limit`, so a smaller limit
 * gives a prefix of a larger one's answer. A ranking's length varies by query (most are longer
 * than any limit, some short, a few empty). Results are built to fit the query operators and
 * domain filters, and only those that `satisfies` accepts are kept, so every returned result
 * really matches the query. Rankings change from epoch to epoch as world.ts describes.
 */

import { canonicalJson } from '../contract/canonical-json.ts';
import {
  type CategoryType,
  LIMITS,
  type NormalisedSearchRequest,
  type SourceType,
} from '../contract/index.ts';
import {
  KNOWN_HOSTS,
  NEWS_HOSTS,
  type Plan,
  pick,
  planOf,
  type Ranked,
  rankedResult,
  WEB_HOSTS,
} from './candidates.ts';
import { createRandom, type Random } from './faults.ts';
import { parseQuery, type QueryConstraints, type Size, sizeSatisfies } from './query.ts';
import { seedOf } from './request-key.ts';
import { rankedIds } from './world.ts';
import { DEFAULT_EPOCH_SHARES, type EpochShares } from './world-options.ts';

export interface WebItem {
  title: string;
  description: string;
  url: string;
  category?: string;
}

export interface NewsItem {
  title: string;
  snippet: string;
  url: string;
  date: string;
  imageUrl: string;
  position: number;
}

export interface ImageItem {
  title: string;
  imageUrl: string;
  imageWidth: number;
  imageHeight: number;
  url: string;
  position: number;
}

export interface ResultSet {
  web?: WebItem[];
  news?: NewsItem[];
  images?: ImageItem[];
}

/**
 * Share of queries answering no result at all, of source rankings that are empty, and of
 * source rankings that are short (1..SHORT_MAX results); the others hold LIMITS.search.limitMax.
 */
const EMPTY_SHARE = 0.05;
const SHORT_SHARE = 0.3;
const SHORT_MAX = 20;

const IMAGE_SIZES: Size[] = [
  { width: 640, height: 480 },
  { width: 800, height: 600 },
  { width: 1024, height: 768 },
  { width: 1280, height: 720 },
  { width: 1920, height: 1080 },
];

/** Seeds of the per-source random streams. */
const SOURCE_SEEDS: Record<SourceType, number> = {
  web: seedOf('web'),
  news: seedOf('news'),
  images: seedOf('images'),
};

/** News dates: the 365 days before 2026-01-01, by days back. */
const NEWS_DATES = Array.from({ length: 365 }, (_, days) =>
  new Date(Date.UTC(2026, 0, 1) - days * 86_400_000).toISOString().slice(0, 10),
);

/** How many results the ranking of one source holds for this query: none, a few, or the most. */
function rankingLength(random: Random): number {
  const r = random();
  if (r < EMPTY_SHARE) return 0;
  if (r < EMPTY_SHARE + SHORT_SHARE) return 1 + Math.floor(random() * SHORT_MAX);
  return LIMITS.search.limitMax;
}

function newsDate(random: Random): string {
  return NEWS_DATES[Math.floor(random() * 365)]!;
}

function imageSize(c: QueryConstraints, random: Random): Size {
  if (c.imageSize) return c.imageSize;
  const size = pick(IMAGE_SIZES, random);
  if (c.larger && !sizeSatisfies(size, c)) {
    return {
      width: c.larger.width + 1 + Math.floor(random() * 400),
      height: c.larger.height + 1 + Math.floor(random() * 300),
    };
  }
  return size;
}

function webItems(items: Ranked[]): WebItem[] {
  const out: WebItem[] = [];
  for (const { url, title, text, category } of items) {
    out.push(
      category ? { title, description: text, url, category } : { title, description: text, url },
    );
  }
  return out;
}

function newsItems(items: Ranked[]): NewsItem[] {
  const out: NewsItem[] = [];
  for (let i = 0; i < items.length; i++) {
    const { url, title, text, random } = items[i]!;
    out.push({
      title,
      snippet: text,
      url,
      date: newsDate(random),
      // The item's own picture, whatever its position.
      imageUrl: `${url.replace(/\/[^/]*$/, '')}/images/${1 + Math.floor(random() * 1000)}.jpg`,
      position: i + 1,
    });
  }
  return out;
}

function imageItems(items: Ranked[], c: QueryConstraints): ImageItem[] {
  const out: ImageItem[] = [];
  for (let i = 0; i < items.length; i++) {
    const { url, title, host, random } = items[i]!;
    const size = imageSize(c, random);
    // The origin of a URL on one of the generator's own hosts needs no parsing.
    const origin = KNOWN_HOSTS.has(host) ? `https://${host}` : new URL(url).origin;
    out.push({
      title,
      imageUrl: `${origin}/images/${seedOf(url).toString(16)}.jpg`,
      imageWidth: size.width,
      imageHeight: size.height,
      url,
      position: i + 1,
    });
  }
  return out;
}

/** The request fields that decide a ranking (not `limit`, scrape options, billing or client). */
function rankingFields(request: NormalisedSearchRequest) {
  return {
    query: request.query,
    includeDomains: request.includeDomains,
    excludeDomains: request.excludeDomains,
    tbs: request.tbs,
    location: request.location,
    country: request.country,
    lang: request.lang,
    safe: request.safe,
    filter: request.filter,
  };
}

/**
 * The top `limit` results of a ranking at `epoch`: the ranking's results in order, skipping
 * positions whose result does not satisfy the query. A smaller limit gives a prefix of a
 * larger one's answer.
 */
function topOfRanking(
  plan: Plan,
  pool: readonly string[],
  rankingSeed: number,
  limit: number,
  world: WorldAt,
): Ranked[] {
  const random = createRandom(rankingSeed);
  const length = rankingLength(random);
  const ids = rankedIds(rankingSeed, length, world.epoch, world.shares);
  const out: Ranked[] = [];
  const seen = new Set<string>();
  for (let position = 0; position < length && out.length < limit; position++) {
    const item = rankedResult(plan, ids ? ids[position]! : position, pool, rankingSeed);
    if (!item || seen.has(item.url)) continue;
    seen.add(item.url);
    out.push(item);
  }
  return out;
}

/** The epoch to answer for and what changes from one epoch to the next. */
export interface WorldAt {
  epoch: number;
  shares: EpochShares;
}

const WORLD_AT_START: WorldAt = { epoch: 0, shares: DEFAULT_EPOCH_SHARES };

/**
 * The results of a validated, normalised request at an epoch of the world. Each source has one
 * ranking per seed, query, filters and source options (whatever the limit or scrape options),
 * and answers its top `limit`. `data` holds keys only for sources with results.
 */
export function generateResults(
  request: NormalisedSearchRequest,
  seed: number,
  world: WorldAt = WORLD_AT_START,
): ResultSet {
  const out: ResultSet = {};
  // A few queries find nothing at all, whatever the options.
  if (createRandom(seedOf(`${seed}\n${request.query}`))() < EMPTY_SHARE) return out;
  const categories: CategoryType[] = [];
  for (const category of request.categories) categories.push(category.type);
  const plan = planOf(
    parseQuery(request.query),
    { includeDomains: request.includeDomains, excludeDomains: request.excludeDomains },
    categories,
  );
  const fields = canonicalJson(rankingFields(request));
  const done = new Set<SourceType>();
  for (const source of request.sources) {
    const type = source.type;
    if (done.has(type)) continue;
    done.add(type);
    // Categories pick the hosts of web results only.
    const key = `${seed}\n${fields}\n${canonicalJson(source)}${type === 'web' ? canonicalJson(categories) : ''}`;
    const rankingSeed = seedOf(key) ^ SOURCE_SEEDS[type];
    if (type === 'web') {
      const items = topOfRanking(plan, WEB_HOSTS, rankingSeed, request.limit, world);
      if (items.length > 0) out.web = webItems(items);
    } else if (type === 'news') {
      const newsPlan = { ...plan, categories: [] };
      const items = topOfRanking(newsPlan, NEWS_HOSTS, rankingSeed, request.limit, world);
      if (items.length > 0) out.news = newsItems(items);
    } else {
      const imagePlan = { ...plan, categories: [] };
      const items = topOfRanking(imagePlan, WEB_HOSTS, rankingSeed, request.limit, world);
      if (items.length > 0) out.images = imageItems(items, plan.c);
    }
  }
  return out;
}

/** Number of results over all sources. */
export function totalResults(results: ResultSet): number {
  return (results.web?.length ?? 0) + (results.news?.length ?? 0) + (results.images?.length ?? 0);
}
