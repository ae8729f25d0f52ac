/**
 * The canonical form of a search request (the key of the results cache and the source of its
 * seed) and the seeds derived from text. Both sit on the path of every search answer, so the
 * request's known fields are walked in a precomputed order instead of sorting its keys.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../contract/canonical-json.ts';
import { type NormalisedSearchRequest, SearchRequestObjectSchema } from '../contract/index.ts';

/** Fields that do not change what a search finds. */
const NOT_RESULT_FIELDS: ReadonlySet<string> = new Set([
  'origin',
  'integration',
  'timeout',
  '__agentInterop',
]);

/** The request fields that count for results, sorted, each with its quoted name. */
const RESULT_FIELDS = Object.keys(SearchRequestObjectSchema.shape)
  .filter((key) => !NOT_RESULT_FIELDS.has(key))
  .sort()
  .map((key) => ({ key, quoted: `${JSON.stringify(key)}:` }));
const REQUEST_FIELDS: ReadonlySet<string> = new Set(Object.keys(SearchRequestObjectSchema.shape));

/** The canonical form of a request as far as results go; the key of the results cache. */
export function canonicalRequest(request: NormalisedSearchRequest): string {
  const value = request as unknown as Record<string, unknown>;
  // The request's fields are known: walk them in sorted order instead of sorting its keys.
  for (const key in value) {
    if (!REQUEST_FIELDS.has(key)) return canonicalJson(withoutNonResultFields(value));
  }
  let out = '{';
  for (const { key, quoted } of RESULT_FIELDS) {
    const item = value[key];
    if (item === undefined) continue;
    if (out.length > 1) out += ',';
    out += quoted + canonicalJson(item);
  }
  return `${out}}`;
}

function withoutNonResultFields(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in value) if (!NOT_RESULT_FIELDS.has(key)) out[key] = value[key];
  return out;
}

/** The first 32 bits of the SHA-256 of `text` (UTF-8), as an unsigned integer. */
export function seedOf(text: string): number {
  return Number.parseInt(hash('sha256', text, 'hex').slice(0, 8), 16);
}
