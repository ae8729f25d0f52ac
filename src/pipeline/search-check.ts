/**
 * Checking the expanded searches of one item: the request rules and the contract's
 * SearchRequestSchema, with findings placed where the file wrote the value at fault.
 */
import {
  hostedServiceWarnings,
  type SearchRequest,
  SearchRequestObjectSchema,
  SearchRequestSchema,
} from '../contract/index.ts';
import { describeVars, type ExpandedSearch, matrixSize, originOf } from './expand.ts';
import type { FindingSet } from './finding-set.ts';
import type { Finding } from './issues.ts';
import { parseTemplate } from './placeholders.ts';
import { MESSAGES_COVERED_BY_RULES, queryNotBlank, REQUEST_RULES } from './request-rules.ts';
import { type Defaults, REQUEST_FIELDS, type SearchItem } from './schema.ts';
import { findingsFromZod } from './zod-issues.ts';

/**
 * A checker for the searches of one item. When the query is filled from placeholders, the
 * rest of the request depends only on the matrix values of request fields: the whole request
 * is validated once per combination of those, and each further search checks its query alone.
 * (The contract's cross-field rules do not involve `query`.) What is kept per combination is
 * one byte; the validated requests of the most recent combinations are reused as they are.
 */
export function createSearchChecker(
  item: SearchItem,
  defaults: Defaults | undefined,
  findings: FindingSet,
): (search: ExpandedSearch) => SearchRequest | undefined {
  const json = item as Record<string, unknown>;
  const templated = item.query !== undefined && parseTemplate(item.query).names.length > 0;
  const matrix = item.matrix as Record<string, readonly unknown[] | undefined> | undefined;
  const keys =
    matrix === undefined ? [] : Object.keys(matrix).filter((key) => matrix[key] !== undefined);
  // Position of a search's combination of field values: mixed radix over the field keys.
  const strides: Array<{ keyIndex: number; stride: number }> = [];
  let combinations = 1;
  for (let k = keys.length - 1; k >= 0; k--) {
    if (!REQUEST_FIELD_KEYS.has(keys[k]!)) continue;
    strides.push({ keyIndex: k, stride: combinations });
    combinations *= matrix![keys[k]!]!.length;
  }
  // Without a template, or when every search is its own combination, check each in full.
  if (!templated || combinations === matrixSize(matrix)) {
    return (search) => checkSearch(search, json, defaults, findings);
  }
  const combinationOf = (search: ExpandedSearch) => {
    let position = 0;
    for (const { keyIndex, stride } of strides) position += search.choice![keyIndex]! * stride;
    return position;
  };
  const state = new Uint8Array(combinations);
  const recent = new Map<number, SearchRequest>();
  const querySchema = SearchRequestObjectSchema.shape.query;
  return (search) => {
    const combination = combinationOf(search);
    if (state[combination] === UNCHECKED) {
      const checked = checkSearch(search, json, defaults, findings);
      state[combination] = checked === undefined ? INVALID : VALID;
      if (checked !== undefined) remember(recent, combination, checked);
      return checked;
    }
    const query = search.request.query;
    const parsed = querySchema.safeParse(query);
    const blank = queryNotBlank(search.request);
    if (!parsed.success || blank.length > 0) {
      const located = parsed.success
        ? blank
        : findingsFromZod(parsed.error.issues, querySchema, query, ['query']);
      addLocated(located, search, json, defaults, findings);
      return undefined;
    }
    if (state[combination] === INVALID) return undefined;
    const known = recent.get(combination);
    if (known !== undefined) return { ...known, query: parsed.data };
    // Validated before with another query, and since forgotten: the same request parses again.
    const again = SearchRequestSchema.safeParse(search.request);
    if (!again.success) return checkSearch(search, json, defaults, findings);
    remember(recent, combination, again.data);
    return again.data;
  };
}

const UNCHECKED = 0;
const VALID = 1;
const INVALID = 2;
/** Validated requests kept per item for reuse by later searches of the same combination. */
const RECENT_COMBINATIONS = 4096;

function remember(recent: Map<number, SearchRequest>, combination: number, request: SearchRequest) {
  if (recent.size >= RECENT_COMBINATIONS) recent.delete(recent.keys().next().value!);
  recent.set(combination, request);
}

const REQUEST_FIELD_KEYS: ReadonlySet<string> = new Set(REQUEST_FIELDS);

function addLocated(
  located: readonly Finding[],
  search: ExpandedSearch,
  item: Record<string, unknown>,
  defaults: Defaults | undefined,
  findings: FindingSet,
): void {
  if (located.length === 0) return;
  const context = describeVars(search.vars);
  findings.addGroup(
    located.map((finding) => {
      const path = originOf(search, item, defaults, finding.path);
      const fromMatrixValue = path[2] === 'matrix';
      return {
        finding: { ...finding, path },
        context: fromMatrixValue || context === '' ? '' : ` (with ${context})`,
      };
    }),
  );
}

/**
 * Validate one expanded search: the request rules and the contract's SearchRequestSchema.
 * Returns the validated request, or undefined when it has errors (added to `findings`).
 */
function checkSearch(
  search: ExpandedSearch,
  item: Record<string, unknown>,
  defaults: Defaults | undefined,
  findings: FindingSet,
): SearchRequest | undefined {
  const located: Finding[] = [];
  for (const rule of REQUEST_RULES) located.push(...rule(search.request));
  const parsed = SearchRequestSchema.safeParse(search.request);
  if (!parsed.success) {
    const issues = parsed.error.issues.filter(
      (issue) => !MESSAGES_COVERED_BY_RULES.has(issue.message),
    );
    located.push(...findingsFromZod(issues, SearchRequestSchema, search.request));
  }
  addLocated(located, search, item, defaults, findings);
  if (located.some((finding) => finding.severity === 'error') || !parsed.success) return undefined;
  const warnings = hostedServiceWarnings(parsed.data);
  const context = warnings.length === 0 ? '' : describeVars(search.vars);
  for (const warning of warnings) {
    findings.add(
      {
        code: 'HOSTED_SERVICE_REFUSES',
        severity: 'warning',
        path: originOf(search, item, defaults, warning.path),
        message: warning.message,
      },
      context === '' ? '' : ` (with ${context})`,
    );
  }
  return parsed.data;
}
