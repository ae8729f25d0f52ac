/**
 * The identity of a search across runs: runs of a pipeline compare each search with itself
 * (a matrix cell with the same cell), not task by task. A task's key hashes its whole request,
 * so a change of scrape formats would start every search afresh; the search key hashes the
 * search entry's id and the request without what does not choose or order the results
 * (`scrapeOptions`, `timeout`). Same query, same country, same limit: same search.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../../contract/canonical-json.ts';

/** Request fields that do not choose or order results. */
const NOT_IN_SEARCH_KEY = new Set(['scrapeOptions', 'timeout']);

/** Request fields shown beside the query when a search is named (a matrix cell's values). */
const LABEL_FIELDS = ['country', 'location', 'tbs', 'lang'] as const;

/** 16 hex characters of SHA-256 over the search entry and the request's search fields. */
export function searchKey(requestJson: string, searchEntry: string | null): string {
  const request = JSON.parse(requestJson) as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(request)) {
    if (!NOT_IN_SEARCH_KEY.has(name)) fields[name] = value;
  }
  const text = canonicalJson({ entry: searchEntry, request: fields });
  return hash('sha256', text, 'buffer').toString('hex', 0, 8);
}

/** A search's name for people: its entry id, its query and the fields a matrix varies. */
export function searchLabel(requestJson: string, searchEntry: string | null): string {
  const request = JSON.parse(requestJson) as Record<string, unknown>;
  const query = typeof request.query === 'string' ? request.query : '';
  const extras: string[] = [];
  for (const name of LABEL_FIELDS) {
    const value = request[name];
    if (value !== undefined && value !== null) extras.push(`${name}=${String(value)}`);
  }
  const head = searchEntry ? `${searchEntry}: ${query}` : query;
  return extras.length > 0 ? `${head} (${extras.join(', ')})` : head;
}

/** The query of a stored request ('' when it has none). */
export function queryOf(requestJson: string): string {
  const query = (JSON.parse(requestJson) as { query?: unknown }).query;
  return typeof query === 'string' ? query : '';
}
