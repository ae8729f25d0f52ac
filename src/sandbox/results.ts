/**
 * Deterministic search results. The same canonical request and seed give the same results; the
 * count varies by query (most fill `limit`, some return fewer, a few none), per source type.
 * Candidates are built to fit the query operators and domain filters, and only those that
 * `satisfies` accepts are kept, so every returned result really matches the query.
 */
import { createHash } from 'node:crypto';
import type { CategoryType, NormalisedSearchRequest, SourceType } from '../contract/index.ts';
import { createRandom, type Random } from './faults.ts';
import {
  type Candidate,
  type DomainFilters,
  parseQuery,
  type QueryConstraints,
  type Size,
  satisfies,
  sizeSatisfies,
} from './query.ts';

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

const WEB_HOSTS = [
  'en.wikipedia.org',
  'www.example.com',
  'docs.example.org',
  'blog.example.net',
  'medium.com',
  'dev.to',
  'stackoverflow.com',
  'www.reddit.com',
  'arstechnica.com',
  'www.theguardian.com',
];
const NEWS_HOSTS = [
  'www.reuters.com',
  'apnews.com',
  'www.bbc.co.uk',
  'www.theguardian.com',
  'techcrunch.com',
  'www.theverge.com',
];
const CATEGORY_HOSTS: Record<CategoryType, string[]> = {
  github: ['github.com'],
  research: ['arxiv.org', 'www.nature.com', 'pubmed.ncbi.nlm.nih.gov', 'dl.acm.org'],
  pdf: ['www.example.com', 'docs.example.org', 'www.researchgate.net'],
  developer: ['github.com', 'developer.mozilla.org', 'docs.python.org'],
};
const SUFFIXES = [
  'guide',
  'overview',
  'tutorial',
  'reference',
  'explained',
  'handbook',
  'introduction',
  'examples',
  'deep dive',
  'notes',
];
const IMAGE_SIZES: Size[] = [
  { width: 640, height: 480 },
  { width: 800, height: 600 },
  { width: 1024, height: 768 },
  { width: 1280, height: 720 },
  { width: 1920, height: 1080 },
];

/** Stable JSON: object keys sorted, so equal requests give equal strings. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Fields that do not change what a search finds. */
const NOT_RESULT_FIELDS = new Set(['origin', 'integration', 'timeout', '__agentInterop']);

/** The canonical form of a request as far as results go; the key of the results cache. */
export function canonicalRequest(request: NormalisedSearchRequest): string {
  const relevant: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(request)) if (!NOT_RESULT_FIELDS.has(k)) relevant[k] = v;
  return canonicalJson(relevant);
}

export function seedOf(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}

function pick<T>(items: readonly T[], random: Random): T {
  return items[Math.floor(random() * items.length)]!;
}

const slug = (words: readonly string[]) =>
  words
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
const capitalise = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) : s);

interface Plan {
  c: QueryConstraints;
  filters: DomainFilters;
  categories: CategoryType[];
}

function hostFor(
  plan: Plan,
  pool: readonly string[],
  category: CategoryType | undefined,
  random: Random,
) {
  if (plan.c.sites.length > 0) return pick(plan.c.sites, random);
  if (plan.filters.includeDomains?.length) return pick(plan.filters.includeDomains, random);
  if (category) return pick(CATEGORY_HOSTS[category], random);
  if (plan.c.related) return pick([plan.c.related, ...pool], random);
  return pick(pool, random);
}

function candidate(plan: Plan, i: number, pool: readonly string[], random: Random) {
  const { c } = plan;
  const category =
    plan.categories.length > 0 ? plan.categories[i % plan.categories.length] : undefined;
  const host = hostFor(plan, pool, category, random);
  const topic = [...c.intitle, ...c.phrases, ...c.terms];
  const subject = topic.length > 0 ? topic.join(' ') : host.replace(/^www\./, '');
  const suffix = pick(SUFFIXES, random);
  const ext = c.filetypes[0] ?? (category === 'pdf' ? 'pdf' : undefined);
  const pathWords = [...c.inurl, ...c.terms.slice(0, 4), suffix, String(i + 1)];
  const path =
    category === 'github' || (category === 'developer' && host === 'github.com')
      ? `/${slug(c.terms.slice(0, 1)) || 'project'}/${slug(pathWords)}`
      : category === 'research' && host === 'arxiv.org'
        ? `/abs/2${String(Math.floor(random() * 1e8))
            .padStart(8, '0')
            .replace(/^(\d{3})/, '$1.')}`
        : `/${slug(pathWords)}${ext ? `.${ext}` : ''}`;
  const title = `${capitalise(subject)}: ${suffix} ${i + 1}`;
  const quoted = c.phrases.map((p) => `"${p}"`).join(' ');
  const text = `${capitalise(suffix)} about ${subject}${quoted ? ` (${quoted})` : ''}, with details and examples from ${host}.`;
  return { url: `https://${host}${path}`, title, text, category };
}

/** Up to `count` candidates that satisfy the query, from at most 3 x count attempts. */
function fitting(
  plan: Plan,
  count: number,
  pool: readonly string[],
  random: Random,
): Array<Candidate & { category: CategoryType | undefined }> {
  const out: Array<Candidate & { category: CategoryType | undefined }> = [];
  const seen = new Set<string>();
  for (let i = 0; out.length < count && i < count * 3; i++) {
    const item = candidate(plan, i, pool, random);
    if (seen.has(item.url) || !satisfies(item, plan.c, plan.filters)) continue;
    seen.add(item.url);
    out.push(item);
  }
  return out;
}

/** How many results a source answers for this query: limit, fewer, or none. */
function countFor(limit: number, random: Random): number {
  const r = random();
  if (r < EMPTY_SHARE) return 0;
  if (r < EMPTY_SHARE + PARTIAL_SHARE) return Math.max(1, Math.floor(random() * limit));
  return limit;
}

function newsDate(random: Random): string {
  const base = Date.UTC(2026, 0, 1);
  return new Date(base - Math.floor(random() * 365) * 86_400_000).toISOString().slice(0, 10);
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

/**
 * The results of a validated, normalised request. `seed` is the sandbox seed; the query seed is
 * a hash of the canonical request and it. `data` holds keys only for sources with results.
 */
export function generateResults(request: NormalisedSearchRequest, seed: number): ResultSet {
  const base = seedOf(`${seed}\n${canonicalRequest(request)}`);
  const querySeed = seedOf(`${seed}\n${request.query}`);
  const plan: Plan = {
    c: parseQuery(request.query),
    filters: { includeDomains: request.includeDomains, excludeDomains: request.excludeDomains },
    categories: request.categories.map((cat) => cat.type),
  };
  const out: ResultSet = {};
  const types = new Set<SourceType>(request.sources.map((s) => s.type));
  // A few queries find nothing at all, whatever the options.
  if (createRandom(querySeed)() < EMPTY_SHARE) return out;
  for (const type of types) {
    const random = createRandom(base ^ seedOf(type));
    const count = countFor(request.limit, random);
    if (count === 0) continue;
    if (type === 'web') {
      const items = fitting(plan, count, WEB_HOSTS, random);
      if (items.length > 0) {
        out.web = items.map(({ url, title, text, category }) => ({
          title,
          description: text,
          url,
          ...(category ? { category } : {}),
        }));
      }
    } else if (type === 'news') {
      const items = fitting({ ...plan, categories: [] }, count, NEWS_HOSTS, random);
      if (items.length > 0) {
        out.news = items.map(({ url, title, text }, i) => ({
          title,
          snippet: text,
          url,
          date: newsDate(random),
          imageUrl: `${url.replace(/\/[^/]*$/, '')}/images/${i + 1}.jpg`,
          position: i + 1,
        }));
      }
    } else {
      const items = fitting({ ...plan, categories: [] }, count, WEB_HOSTS, random);
      if (items.length > 0) {
        out.images = items.map(({ url, title }, i) => {
          const size = imageSize(plan.c, random);
          return {
            title,
            imageUrl: `${new URL(url).origin}/images/${seedOf(url).toString(16)}.jpg`,
            imageWidth: size.width,
            imageHeight: size.height,
            url,
            position: i + 1,
          };
        });
      }
    }
  }
  return out;
}

/** Number of results over all sources. */
export function totalResults(results: ResultSet): number {
  return (results.web?.length ?? 0) + (results.news?.length ?? 0) + (results.images?.length ?? 0);
}
