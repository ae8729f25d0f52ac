/**
 * Request rules: cross-field rules run on every merged, expanded request, with paths into the
 * request (the caller maps them back to the file). They report some of the contract's own
 * refusals themselves, at a better position.
 */
import { DOMAIN_CONFLICT_MESSAGE, WAIT_FOR_TIMEOUT_MESSAGE } from '../contract/index.ts';
import { errorFinding, type Finding } from './issues.ts';

type Json = Record<string, unknown>;

function nonEmptyList(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0;
}

/** includeDomains and excludeDomains are not both set (request path). */
export function domainsExclusive(request: Json): Finding[] {
  if (!nonEmptyList(request.includeDomains) || !nonEmptyList(request.excludeDomains)) return [];
  return [
    errorFinding(['excludeDomains'], DOMAIN_CONFLICT_MESSAGE, 'DOMAINS_CONFLICT', {
      allowed: 'includeDomains or excludeDomains, not both',
    }),
  ];
}

/** scrapeOptions.waitFor is at most half of an explicit scrapeOptions.timeout (request path). */
export function waitForWithinTimeout(request: Json): Finding[] {
  const options = request.scrapeOptions as Json | undefined;
  if (typeof options !== 'object' || options === null) return [];
  const { waitFor, timeout } = options;
  if (typeof waitFor !== 'number' || typeof timeout !== 'number' || waitFor * 2 <= timeout)
    return [];
  return [
    errorFinding(['scrapeOptions', 'waitFor'], WAIT_FOR_TIMEOUT_MESSAGE, 'WAIT_FOR_TIMEOUT', {
      received: `${waitFor} ms with timeout ${timeout} ms`,
      allowed: `at most ${Math.floor(timeout / 2)} ms`,
    }),
  ];
}

/**
 * The query says something. The API takes "" (the reference sets no minimum) and bills a
 * search of nothing; in a pipeline it is a mistake: an empty literal, or a placeholder filled
 * with nothing.
 */
export function queryNotBlank(request: Json): Finding[] {
  const { query } = request;
  if (typeof query !== 'string' || query.trim() !== '') return [];
  return [
    errorFinding(['query'], 'query is blank: a search needs words to look for', 'QUERY_BLANK'),
  ];
}

/** Request rules, run on every expanded request. */
export const REQUEST_RULES: ReadonlyArray<(request: Json) => Finding[]> = [
  queryNotBlank,
  domainsExclusive,
  waitForWithinTimeout,
];
/** Contract messages the request rules report themselves (with better positions). */
export const MESSAGES_COVERED_BY_RULES: ReadonlySet<string> = new Set([
  DOMAIN_CONFLICT_MESSAGE,
  WAIT_FOR_TIMEOUT_MESSAGE,
]);
