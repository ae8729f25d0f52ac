/**
 * Candidate results of one query: a host from the query's sites, domain filters, categories
 * or the default pools, a path and a title built from its words, kept when they satisfy the
 * query (`satisfies`). What every candidate of a query shares is worked out once, in its plan.
 * Each result of a ranking is drawn from its own random stream, seeded by the ranking and its
 * id, so a ranking can be read to any depth and reordered without changing its results.
 */
import type { CategoryType } from '../contract/index.ts';
import { createRandom, type Random } from './faults.ts';
import { type Candidate, type DomainFilters, type QueryConstraints, satisfies } from './query.ts';
import { mix } from './world.ts';

export const WEB_HOSTS = [
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
export const NEWS_HOSTS = [
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
/** Hosts the generator picks on its own; URLs on them need no parsing to be known valid. */
export const KNOWN_HOSTS: ReadonlySet<string> = new Set([
  ...WEB_HOSTS,
  ...NEWS_HOSTS,
  ...Object.values(CATEGORY_HOSTS).flat(),
]);

export function pick<T>(items: readonly T[], random: Random): T {
  return items[Math.floor(random() * items.length)]!;
}

function slug(words: readonly string[]): string {
  return words
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

const capitalise = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) : s);

/** Each suffix with its slug (`deep-dive`) and capitalised (`Deep dive`). */
const SUFFIX_FORMS = SUFFIXES.map((suffix) => ({
  suffix,
  slug: slug([suffix]),
  capitalised: capitalise(suffix),
}));

/** What every candidate of one query shares, worked out once per query. */
export interface Plan {
  c: QueryConstraints;
  filters: DomainFilters;
  categories: CategoryType[];
  /** Title subject from intitle:, phrases and terms; undefined when there are none. */
  subject: string | undefined;
  /** `subject` capitalised. */
  titleSubject: string;
  /** ` ("phrase" "phrase")`, or empty. */
  quoted: string;
  /**
   * The slug of the path words before the suffix (inurl: and the first 4 terms), ready to be
   * followed by the suffix: empty, or ending in `-`. `slug([...words, suffix, n])` equals
   * `pathHead + suffixSlug + '-' + n`, as the joining `-` and a non-alphanumeric end of the
   * words collapse into one `-` either way.
   */
  pathHead: string;
  /** First path segment of GitHub-style URLs. */
  project: string;
  /** No operator and no domain filter: any well-formed URL satisfies the query. */
  unconstrained: boolean;
}

export function planOf(
  c: QueryConstraints,
  filters: DomainFilters,
  categories: CategoryType[],
): Plan {
  const topic = [...c.intitle, ...c.phrases, ...c.terms];
  const subject = topic.length > 0 ? topic.join(' ') : undefined;
  const quoted = c.phrases.map((p) => `"${p}"`).join(' ');
  const head = [...c.inurl, ...c.terms.slice(0, 4)]
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-/, '');
  const unconstrained =
    c.sites.length === 0 &&
    c.excludedSites.length === 0 &&
    c.filetypes.length === 0 &&
    c.excludedFiletypes.length === 0 &&
    c.inurl.length === 0 &&
    c.excludedInurl.length === 0 &&
    c.intitle.length === 0 &&
    c.excludedIntitle.length === 0 &&
    c.phrases.length === 0 &&
    c.excludedTerms.length === 0 &&
    !filters.includeDomains?.length &&
    !filters.excludeDomains?.length;
  return {
    c,
    filters,
    categories,
    subject,
    titleSubject: subject === undefined ? '' : capitalise(subject),
    quoted: quoted ? ` (${quoted})` : '',
    pathHead: head === '' || head.endsWith('-') ? head : `${head}-`,
    project: slug(c.terms.slice(0, 1)) || 'project',
    unconstrained,
  };
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

export interface Fitted extends Candidate {
  host: string;
  category: CategoryType | undefined;
}

function candidate(plan: Plan, i: number, pool: readonly string[], random: Random): Fitted {
  const category =
    plan.categories.length > 0 ? plan.categories[i % plan.categories.length] : undefined;
  const host = hostFor(plan, pool, category, random);
  let subject = plan.subject;
  let titleSubject = plan.titleSubject;
  if (subject === undefined) {
    subject = host.startsWith('www.') ? host.slice(4) : host;
    titleSubject = capitalise(subject);
  }
  const { suffix, slug: suffixSlug, capitalised } = pick(SUFFIX_FORMS, random);
  const ext = plan.c.filetypes[0] ?? (category === 'pdf' ? 'pdf' : undefined);
  const n = i + 1;
  const pathSlug = `${plan.pathHead}${suffixSlug}-${n}`;
  const path =
    category === 'github' || (category === 'developer' && host === 'github.com')
      ? `/${plan.project}/${pathSlug}`
      : category === 'research' && host === 'arxiv.org'
        ? `/abs/2${String(Math.floor(random() * 1e8))
            .padStart(8, '0')
            .replace(/^(\d{3})/, '$1.')}`
        : `/${pathSlug}${ext ? `.${ext}` : ''}`;
  return {
    url: `https://${host}${path}`,
    title: `${titleSubject}: ${suffix} ${n}`,
    text: `${capitalised} about ${subject}${plan.quoted}, with details and examples from ${host}.`,
    host,
    category,
  };
}

/** A result of a ranking, with the random stream it was drawn from (for its other fields). */
export interface Ranked extends Fitted {
  random: Random;
}

/** Tries per ranking position to draw a result that satisfies the query. */
const ATTEMPTS = 3;

/**
 * The result with id `id` in the ranking seeded `rankingSeed`: the first of 3 candidates drawn
 * for it that satisfies the query, or undefined (the position stays empty). It depends only on
 * the ranking and the id, so it is the same whatever the limit, epoch or position.
 */
export function rankedResult(
  plan: Plan,
  id: number,
  pool: readonly string[],
  rankingSeed: number,
): Ranked | undefined {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const random = createRandom(mix(mix(rankingSeed, id), attempt));
    const item = candidate(plan, id, pool, random);
    // Without constraints only a malformed URL fails, and the generator's own hosts and
    // paths always form valid ones.
    const fits =
      (plan.unconstrained && KNOWN_HOSTS.has(item.host)) || satisfies(item, plan.c, plan.filters);
    if (fits) return Object.assign(item, { random });
  }
  return undefined;
}
