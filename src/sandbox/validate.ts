/**
 * Validation of search bodies: the contract's zod schema, behind a direct check of the common
 * plain shape (query, limit, string sources, and scalar options). The direct check accepts only
 * bodies the schema accepts and returns what the schema would (the same fields, in the schema's
 * order); anything else, valid or not, goes to the schema, so verdicts and error details are the
 * schema's own.
 */
import {
  invalidBodyError,
  isIntegration,
  LIMITS,
  type SearchRequest,
  SearchRequestSchema,
  SOURCE_TYPES,
} from '../contract/index.ts';

type Check = (value: unknown) => boolean;

const isString: Check = (value) => typeof value === 'string';
const isBoolean: Check = (value) => typeof value === 'boolean';
const SOURCE_NAMES: ReadonlySet<unknown> = new Set(SOURCE_TYPES);

/** Fields the direct check handles, in the schema's order, each with its rule. */
const PLAIN_FIELDS: ReadonlyMap<string, Check> = new Map<string, Check>([
  ['query', (value) => typeof value === 'string' && value.length <= LIMITS.search.queryMaxChars],
  [
    'limit',
    (value) =>
      Number.isSafeInteger(value) &&
      (value as number) >= LIMITS.search.limitMin &&
      (value as number) <= LIMITS.search.limitMax,
  ],
  // Strings only: all strings are never mixed.
  ['sources', (value) => Array.isArray(value) && value.every((source) => SOURCE_NAMES.has(source))],
  ['location', isString],
  ['country', isString],
  ['safe', isBoolean],
  ['timeout', (value) => Number.isSafeInteger(value) && (value as number) > 0],
  ['ignoreInvalidURLs', isBoolean],
  ['highlights', isBoolean],
  ['origin', isString],
  ['integration', isIntegration],
  ['filter', isString],
  ['lang', isString],
]);

/** The body as the schema outputs it, when it has the plain shape; else undefined. */
export function plainSearchRequest(body: unknown): SearchRequest | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const input = body as Record<string, unknown>;
  let hasQuery = false;
  for (const key of Object.keys(input)) {
    const check = PLAIN_FIELDS.get(key);
    if (check === undefined || !check(input[key])) return undefined;
    if (key === 'query') hasQuery = true;
  }
  if (!hasQuery) return undefined;
  const out: Record<string, unknown> = {};
  for (const key of PLAIN_FIELDS.keys()) {
    if (!Object.hasOwn(input, key)) continue;
    const value = input[key];
    out[key] = Array.isArray(value) ? [...value] : value;
  }
  return out as SearchRequest;
}

export type SearchValidation =
  | { ok: true; request: SearchRequest }
  | { ok: false; body: ReturnType<typeof invalidBodyError> };

/** The validated request, or the 400 body. */
export function validateSearchRequest(body: unknown): SearchValidation {
  const plain = plainSearchRequest(body);
  if (plain) return { ok: true, request: plain };
  const parsed = SearchRequestSchema.safeParse(body);
  return parsed.success
    ? { ok: true, request: parsed.data }
    : { ok: false, body: invalidBodyError(parsed.error) };
}
