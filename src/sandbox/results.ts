/**
 * Deterministic search results. The same canonical request and seed give the same results; the
 * count varies by query (most fill `limit`, some return fewer, a few none), per source type.
 * Candidates are built to fit the query operators and domain filters, and only those that
 * `satisfies` accepts are kept, so every returned result really matches the query.
 */
import type { CategoryType, NormalisedSearchRequest, SourceType } from '../contract/index.ts';
import {
  type Fitted,
  fitting,
  KNOWN_HOSTS,
  NEWS_HOSTS,
  pick,
  planOf,
  WEB_HOSTS,
} from './candidates.ts';
import { createRandom, type Random } from './faults.ts';
import { parseQuery, type QueryConstraints, type Size, sizeSatisfies } from './query.ts';
import { canonicalRequest, seedOf } from './request-key.ts';

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

/** Share of queries answering no result at all, and share answering fewer than `limit`. */
const EMPTY_SHARE = 0.05;
const PARTIAL_SHARE = 0.3;

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

/** How many results a source answers for this query: limit, fewer, or none. */
function countFor(limit: number, random: Random): number {
  const r = random();
  if (r < EMPTY_SHARE) return 0;
  if (r < EMPTY_SHARE + PARTIAL_SHARE) return Math.max(1, Math.floor(random() * limit));
  return limit;
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

function webItems(items: Fitted[]): WebItem[] {
  const out: WebItem[] = [];
  for (const { url, title, text, category } of items) {
    out.push(
      category ? { title, description: text, url, category } : { title, description: text, url },
    );
  }
  return out;
}

function newsItems(items: Fitted[], random: Random): NewsItem[] {
  const out: NewsItem[] = [];
  for (let i = 0; i < items.length; i++) {
    const { url, title, text } = items[i]!;
    out.push({
      title,
      snippet: text,
      url,
      date: newsDate(random),
      imageUrl: `${url.replace(/\/[^/]*$/, '')}/images/${i + 1}.jpg`,
      position: i + 1,
    });
  }
  return out;
}

function imageItems(items: Fitted[], c: QueryConstraints, random: Random): ImageItem[] {
  const out: ImageItem[] = [];
  for (let i = 0; i < items.length; i++) {
    const { url, title, host } = items[i]!;
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

/**
 * The results of a validated, normalised request. `seed` is the sandbox seed; the query seed is
 * a hash of the canonical request (`canonicalRequest(request)`, passed in when known) and it.
 * `data` holds keys only for sources with results.
 */
export function generateResults(
  request: NormalisedSearchRequest,
  seed: number,
  canonical: string = canonicalRequest(request),
): ResultSet {
  const out: ResultSet = {};
  // A few queries find nothing at all, whatever the options.
  if (createRandom(seedOf(`${seed}\n${request.query}`))() < EMPTY_SHARE) return out;
  const base = seedOf(`${seed}\n${canonical}`);
  const categories: CategoryType[] = [];
  for (const category of request.categories) categories.push(category.type);
  const plan = planOf(
    parseQuery(request.query),
    { includeDomains: request.includeDomains, excludeDomains: request.excludeDomains },
    categories,
  );
  const types = new Set<SourceType>();
  for (const source of request.sources) types.add(source.type);
  for (const type of types) {
    const random = createRandom(base ^ SOURCE_SEEDS[type]);
    const count = countFor(request.limit, random);
    if (count === 0) continue;
    if (type === 'web') {
      const items = fitting(plan, count, WEB_HOSTS, random);
      if (items.length > 0) out.web = webItems(items);
    } else if (type === 'news') {
      const items = fitting({ ...plan, categories: [] }, count, NEWS_HOSTS, random);
      if (items.length > 0) out.news = newsItems(items, random);
    } else {
      const items = fitting({ ...plan, categories: [] }, count, WEB_HOSTS, random);
      if (items.length > 0) out.images = imageItems(items, plan.c, random);
    }
  }
  return out;
}

/** Number of results over all sources. */
export function totalResults(results: ResultSet): number {
  return (results.web?.length ?? 0) + (results.news?.length ?? 0) + (results.images?.length ?? 0);
}
