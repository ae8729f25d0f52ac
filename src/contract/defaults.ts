/**
 * Documented defaults, applied by pure functions (the schemas apply none, so a validated request
 * stays what the caller wrote). Results are new objects; inputs are never mutated.
 */
import type { Action } from './actions.ts';
import { type FormatObject, toFormatObject } from './formats.ts';
import { LIMITS } from './limits.ts';
import type { Parser, ScrapeOptions } from './scrape-options.ts';
import type {
  CategoryObject,
  CategoryType,
  SearchRequest,
  SourceObject,
  SourceType,
} from './search.ts';

/** ScrapeOptions with every documented default filled in; formats in object form. */
export interface NormalisedScrapeOptions
  extends Omit<ScrapeOptions, 'formats' | 'parsers' | 'actions'> {
  formats: FormatObject[];
  onlyMainContent: boolean;
  onlyCleanContent: boolean;
  maxAge: number;
  waitFor: number;
  mobile: boolean;
  skipTlsVerification: boolean;
  timeout: number;
  parsers: Parser[];
  actions: Action[];
  removeBase64Images: boolean;
  blockAds: boolean;
  proxy: 'basic' | 'enhanced' | 'auto';
  storeInCache: boolean;
  lockdown: boolean;
  redactPII: NonNullable<ScrapeOptions['redactPII']>;
}

export interface WithScrapeOptionsDefaultsOptions {
  /**
   * Format list used when `formats` is absent. Default `[{type: 'markdown'}]` (the reference's
   * ScrapeOptions default); search passes `[]`, as a search without formats scrapes nothing.
   */
  defaultFormats?: readonly FormatObject[];
}

export function withScrapeOptionsDefaults(
  options: ScrapeOptions,
  settings: WithScrapeOptionsDefaultsOptions = {},
): NormalisedScrapeOptions {
  const lockdown = options.lockdown ?? false;
  const actions = options.actions ?? [];
  const sensitive = actions.length > 0 || Object.keys(options.headers ?? {}).length > 0;
  const formats = options.formats?.map(toFormatObject) ?? [
    ...(settings.defaultFormats ?? [{ type: 'markdown' as const }]),
  ];
  const normalised: NormalisedScrapeOptions = {
    ...options,
    formats,
    onlyMainContent: options.onlyMainContent ?? true,
    onlyCleanContent: options.onlyCleanContent ?? false,
    maxAge:
      options.maxAge ??
      (lockdown ? LIMITS.scrape.maxAgeLockdownDefaultMs : LIMITS.scrape.maxAgeDefaultMs),
    waitFor: options.waitFor ?? 0,
    mobile: options.mobile ?? false,
    skipTlsVerification: options.skipTlsVerification ?? true,
    timeout: options.timeout ?? LIMITS.scrape.timeoutDefaultMs,
    parsers: options.parsers ?? ['pdf'],
    actions,
    removeBase64Images: options.removeBase64Images ?? true,
    blockAds: options.blockAds ?? true,
    proxy: options.proxy ?? 'auto',
    storeInCache: sensitive ? false : (options.storeInCache ?? true),
    lockdown,
    redactPII: options.redactPII ?? false,
  };
  if (options.location) {
    normalised.location = { ...options.location, country: options.location.country ?? 'US' };
  }
  return normalised;
}

/** A search request with the documented defaults filled in, sources and categories as objects. */
export interface NormalisedSearchRequest
  extends Omit<SearchRequest, 'sources' | 'categories' | 'scrapeOptions'> {
  limit: number;
  sources: SourceObject[];
  categories: CategoryObject[];
  country: string;
  timeout: number;
  ignoreInvalidURLs: boolean;
  highlights: boolean;
  /** Present only when the request had scrapeOptions; `formats` defaults to `[]` here. */
  scrapeOptions?: NormalisedScrapeOptions;
}

const DEFAULT_SOURCES: readonly SourceObject[] = [{ type: 'web' }];

function toSourceObject(source: SourceType | SourceObject): SourceObject {
  return typeof source === 'string' ? { type: source } : { ...source };
}

function toCategoryObject(category: CategoryType | CategoryObject): CategoryObject {
  return typeof category === 'string' ? { type: category } : { ...category };
}

/**
 * Applies the search defaults: limit 10, sources `[{type:'web'}]` (also for an empty list, which
 * the hosted service accepts), categories `[]`, country `US`, timeout 60000 ms,
 * ignoreInvalidURLs false, highlights true, and ScrapeOptions defaults when scrapeOptions is
 * present (with `formats` defaulting to `[]`: no formats, no scraping). Deterministic; the
 * input is not mutated.
 */
export function withSearchDefaults(request: SearchRequest): NormalisedSearchRequest {
  // Fields are assigned to the fresh rest object rather than spread into a literal: the same
  // result (keys in the same order), but V8 adds properties after a spread slowly, and the
  // sandbox normalises every search it answers.
  const { scrapeOptions, sources, categories, ...rest } = request;
  const normalised = rest as NormalisedSearchRequest;
  normalised.limit = request.limit ?? LIMITS.search.limitDefault;
  normalised.sources =
    sources && sources.length > 0
      ? sources.map(toSourceObject)
      : DEFAULT_SOURCES.map((s) => ({ ...s }));
  normalised.categories = (categories ?? []).map(toCategoryObject);
  normalised.country = request.country ?? 'US';
  normalised.timeout = request.timeout ?? LIMITS.search.timeoutDefaultMs;
  normalised.ignoreInvalidURLs = request.ignoreInvalidURLs ?? false;
  normalised.highlights = request.highlights ?? true;
  if (scrapeOptions) {
    normalised.scrapeOptions = withScrapeOptionsDefaults(scrapeOptions, { defaultFormats: [] });
  }
  return normalised;
}

/**
 * The body to send for a request (normalised or as written). Planning fills in
 * `scrapeOptions.timeout` (60000) when it was not written; sent with a `waitFor` above half of
 * it, that default would make a body the hosted service refuses ("waitFor must not exceed half
 * of timeout") out of one it accepts, as its rule applies only to a timeout that was sent. Such a
 * timeout cannot have been written (validation refuses it), so it is left out. Everything else
 * is sent as is; the input is not mutated.
 */
export function requestToSend<T extends SearchRequest | NormalisedSearchRequest>(request: T): T {
  const options = request.scrapeOptions;
  if (
    options?.waitFor === undefined ||
    options.timeout === undefined ||
    options.waitFor * 2 <= options.timeout
  ) {
    return request;
  }
  const { timeout: _filledIn, ...rest } = options;
  return { ...request, scrapeOptions: rest };
}

/**
 * True when search results will be scraped: `scrapeOptions.formats` is non-empty. Without
 * scrapeOptions or formats, results carry only url, title and description.
 */
export function formatsRequested(request: {
  scrapeOptions?: { formats?: readonly unknown[] | undefined } | undefined;
}): boolean {
  return (request.scrapeOptions?.formats?.length ?? 0) > 0;
}
