/**
 * The canonical form of a search request (the key of the results cache and the source of its
 * seed) and the seeds derived from text. Both sit on the path of every search answer, so they
 * are written as plain loops.
 */
import { hash } from 'node:crypto';
import { type NormalisedSearchRequest, SearchRequestObjectSchema } from '../contract/index.ts';

/** Stable JSON: object keys sorted, so equal requests give equal strings. */
export function canonicalJson(value: unknown): string {
  if (!value || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      // An item without a JSON form (undefined) prints as nothing, as Array#join does.
      out += canonicalJson(value[i]) ?? '';
    }
    return `${out}]`;
  }
  return canonicalObject(value as Record<string, unknown>, undefined);
}

/** `{...}` with keys sorted and undefined values left out; `skip` keys left out too. */
function canonicalObject(value: Record<string, unknown>, skip: ReadonlySet<string> | undefined) {
  const keys = Object.keys(value);
  if (keys.length > 1) keys.sort();
  let out = '{';
  for (const key of keys) {
    const item = value[key];
    if (item === undefined || skip?.has(key)) continue;
    if (out.length > 1) out += ',';
    out += `${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `${out}}`;
}

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
    if (!REQUEST_FIELDS.has(key)) return canonicalObject(value, NOT_RESULT_FIELDS);
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

/** The first 32 bits of the SHA-256 of `text` (UTF-8), as an unsigned integer. */
export function seedOf(text: string): number {
  return Number.parseInt(hash('sha256', text, 'hex').slice(0, 8), 16);
}
