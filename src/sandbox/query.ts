/**
 * Query operators of the search `query` (site:, -site:, filetype:, inurl:, allinurl:, intitle:,
 * allintitle:, related:, imagesize:, larger:, quoted phrases, -word) parsed into constraints,
 * and the predicate that tells whether a result satisfies them. The generator builds results
 * to fit and then keeps only those the predicate accepts.
 */

export interface Size {
  width: number;
  height: number;
}

export interface QueryConstraints {
  /** Plain words, lowercased. */
  terms: string[];
  /** Quoted phrases, as written. */
  phrases: string[];
  /** `-word` and `-"phrase"`, lowercased. */
  excludedTerms: string[];
  sites: string[];
  excludedSites: string[];
  filetypes: string[];
  excludedFiletypes: string[];
  inurl: string[];
  excludedInurl: string[];
  intitle: string[];
  excludedIntitle: string[];
  related: string | undefined;
  imageSize: Size | undefined;
  larger: Size | undefined;
}

const TOKEN = /(-?)(?:([a-z]+):)?(?:"([^"]*)"|(\S+))/gi;
const ALL_OPERATORS = new Set(['allinurl', 'allintitle']);

function parseSize(text: string): Size | undefined {
  const m = /^(\d+)x(\d+)$/i.exec(text);
  return m ? { width: Number(m[1]), height: Number(m[2]) } : undefined;
}

export function parseQuery(query: string): QueryConstraints {
  const c: QueryConstraints = {
    terms: [],
    phrases: [],
    excludedTerms: [],
    sites: [],
    excludedSites: [],
    filetypes: [],
    excludedFiletypes: [],
    inurl: [],
    excludedInurl: [],
    intitle: [],
    excludedIntitle: [],
    related: undefined,
    imageSize: undefined,
    larger: undefined,
  };
  /** After `allinurl:` / `allintitle:`, following plain words belong to it. */
  let allTarget: string[] | undefined;
  for (const m of query.matchAll(TOKEN)) {
    const negated = m[1] === '-';
    const op = m[2]?.toLowerCase();
    const quoted = m[3];
    const value = (quoted ?? m[4] ?? '').trim();
    if (op && ALL_OPERATORS.has(op)) {
      allTarget = op === 'allinurl' ? c.inurl : c.intitle;
      if (value) allTarget.push(value.toLowerCase());
      continue;
    }
    if (!op && !negated && allTarget && quoted === undefined) {
      allTarget.push(value.toLowerCase());
      continue;
    }
    allTarget = undefined;
    if (!value) continue;
    const lower = value.toLowerCase();
    switch (op) {
      case 'site':
        (negated ? c.excludedSites : c.sites).push(lower.replace(/^www\./, ''));
        break;
      case 'filetype':
      case 'ext':
        (negated ? c.excludedFiletypes : c.filetypes).push(lower.replace(/^\./, ''));
        break;
      case 'inurl':
        (negated ? c.excludedInurl : c.inurl).push(lower);
        break;
      case 'intitle':
        (negated ? c.excludedIntitle : c.intitle).push(lower);
        break;
      case 'related':
        c.related = lower;
        break;
      case 'imagesize':
        c.imageSize = parseSize(value);
        break;
      case 'larger':
        c.larger = parseSize(value);
        break;
      default: {
        // An unknown `word:` prefix is part of the text, as search engines treat it.
        const text = op ? `${m[2]}:${value}` : value;
        if (negated) c.excludedTerms.push(text.toLowerCase());
        else if (quoted !== undefined && !op) c.phrases.push(text);
        else c.terms.push(text.toLowerCase());
      }
    }
  }
  return c;
}

export interface DomainFilters {
  includeDomains?: readonly string[] | undefined;
  excludeDomains?: readonly string[] | undefined;
}

export interface Candidate {
  url: string;
  title: string;
  /** Description of a web result or snippet of a news item. */
  text: string;
}

/** True when `host` is `domain` or one of its subdomains. */
export function hostMatches(host: string, domain: string): boolean {
  const h = host.toLowerCase().replace(/^www\./, '');
  const d = domain.toLowerCase().replace(/^www\./, '');
  return h === d || h.endsWith(`.${d}`);
}

function hostIn(host: string, domains: readonly string[]): boolean {
  for (const d of domains) if (hostMatches(host, d)) return true;
  return false;
}

/** Whether a result satisfies every operator of the query and the domain filters. */
export function satisfies(item: Candidate, c: QueryConstraints, filters: DomainFilters): boolean {
  let parsed: URL;
  try {
    parsed = new URL(item.url);
  } catch {
    return false;
  }
  const host = parsed.hostname;
  const url = item.url.toLowerCase();
  const path = parsed.pathname.toLowerCase();
  const title = item.title.toLowerCase();
  const all = `${title} ${item.text.toLowerCase()} ${url}`;

  if (c.sites.length > 0 && !hostIn(host, c.sites)) return false;
  if (hostIn(host, c.excludedSites)) return false;
  if (filters.includeDomains?.length && !hostIn(host, filters.includeDomains)) return false;
  if (filters.excludeDomains?.length && hostIn(host, filters.excludeDomains)) return false;
  if (c.filetypes.length > 0 && !c.filetypes.some((ext) => path.endsWith(`.${ext}`))) return false;
  if (c.excludedFiletypes.some((ext) => path.endsWith(`.${ext}`))) return false;
  if (!c.inurl.every((w) => url.includes(w))) return false;
  if (c.excludedInurl.some((w) => url.includes(w))) return false;
  if (!c.intitle.every((w) => title.includes(w))) return false;
  if (c.excludedIntitle.some((w) => title.includes(w))) return false;
  const text = `${item.title} ${item.text}`.toLowerCase();
  if (!c.phrases.every((p) => text.includes(p.toLowerCase()))) return false;
  if (c.excludedTerms.some((w) => all.includes(w))) return false;
  return true;
}

/** Image dimensions satisfying `imagesize:` and `larger:`. */
export function sizeSatisfies(size: Size, c: QueryConstraints): boolean {
  if (c.imageSize && (size.width !== c.imageSize.width || size.height !== c.imageSize.height)) {
    return false;
  }
  if (c.larger && (size.width <= c.larger.width || size.height <= c.larger.height)) return false;
  return true;
}
