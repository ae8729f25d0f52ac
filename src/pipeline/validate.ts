/**
 * Validation in steps: read -> YAML parse -> schema -> expand and normalise -> named rules ->
 * `{ok: true, value, warnings} | {ok: false, issues}`. Every problem of a file is reported at
 * once, each with its position; nothing here throws on bad input.
 */
import {
  hostedServiceWarnings,
  pdfPagesUnbounded,
  type SearchRequest,
  SearchRequestObjectSchema,
  SearchRequestSchema,
} from '../contract/index.ts';
import { taskKey } from './canonical.ts';
import {
  describeVars,
  type ExpandedSearch,
  expandSearches,
  matrixSize,
  matrixVarsAt,
  originOf,
} from './expand.ts';
import { type Finding, type Issue, type Path, pathToString, sortIssues } from './issues.ts';
import { decodePipelineBytes, MAX_PIPELINE_BYTES, parseYaml, readPipelineText } from './load.ts';
import { parseTemplate } from './placeholders.ts';
import { createRequestNormaliser } from './plan.ts';
import type { Locator } from './positions.ts';
import {
  duplicateSearchIds,
  expansionWithinLimit,
  type IndexedItem,
  MESSAGES_COVERED_BY_RULES,
  type MediaOption,
  matrixFieldNotAlsoSet,
  matrixKeysUsed,
  mediaDirInside,
  mediaFormats,
  mediaMatchesFormats,
  placeholdersHaveValues,
  placeholderValuesAreScalars,
  queryNotBlank,
  queryPresent,
  REQUEST_RULES,
  scheduleCron,
  scheduleTimeZone,
} from './rules.ts';
import {
  type Defaults,
  DefaultsSchema,
  MediaSchema,
  type Pipeline,
  PipelineSchema,
  REQUEST_FIELDS,
  ScheduleSchema,
  type SearchItem,
  SearchItemSchema,
} from './schema.ts';
import { findingsFromZod } from './zod-issues.ts';

/** Counts found while validating. */
export interface PipelineStats {
  /** Entries in `searches`. */
  items: number;
  /** Searches after matrix expansion. */
  expanded: number;
  /** Distinct searches (what a plan holds). */
  unique: number;
}

export type ValidationResult =
  | { ok: true; value: Pipeline; warnings: Issue[]; stats: PipelineStats }
  | { ok: false; issues: Issue[] };

/** Most issues reported for one file; the rest are counted in a last issue. */
export const MAX_ISSUES_PER_FILE = 500;

/** Read, parse and validate a pipeline file. Never throws on bad input. */
export async function loadPipelineFile(path: string): Promise<ValidationResult> {
  const read = await readPipelineText(path, MAX_PIPELINE_BYTES);
  if (!read.ok) return { ok: false, issues: read.issues };
  return parsePipeline(read.text, path);
}

/** Validate raw bytes of a pipeline file (UTF-8 expected). */
export function parsePipelineBytes(bytes: Uint8Array, fileName: string): ValidationResult {
  const decoded = decodePipelineBytes(bytes, fileName);
  if (!decoded.ok) return { ok: false, issues: decoded.issues };
  return parsePipeline(decoded.text, fileName);
}

/** Validate the text of a pipeline file; `fileName` is used in issue positions. */
export function parsePipeline(text: string, fileName: string): ValidationResult {
  const yaml = parseYaml(text);
  if (!yaml.ok) {
    const issues = yaml.findings.map(({ line, col, ...finding }) => ({
      ...toIssue(finding, fileName, { line, col }),
    }));
    return { ok: false, issues: sortIssues(issues) };
  }
  const findings = new FindingSet();
  const data = yaml.data;

  // Schema, whole file.
  const whole = PipelineSchema.safeParse(data);
  if (!whole.success) findings.addAll(findingsFromZod(whole.error.issues, PipelineSchema, data));

  // Parts that are valid on their own, so the rest of the file is still checked.
  const record = isRecord(data) ? data : {};
  const defaults =
    record.defaults === undefined
      ? { success: true as const, data: undefined }
      : DefaultsSchema.safeParse(record.defaults);
  const rawItems = Array.isArray(record.searches) ? record.searches : [];
  const items: IndexedItem[] = [];
  rawItems.forEach((raw, index) => {
    const parsed = SearchItemSchema.safeParse(raw);
    if (parsed.success) items.push({ index, item: withMatrixInWrittenOrder(parsed.data, raw) });
  });
  const byIndex = new Map(items.map(({ index, item }) => [index, item]));
  const schedule = ScheduleSchema.optional().safeParse(record.schedule);
  const media = MediaSchema.optional().safeParse(record.media);

  // Named rules on the file as written.
  findings.addAll(duplicateSearchIds(items));
  const badItems = new Set<number>();
  for (const indexed of items) {
    const itemFindings = [
      ...queryPresent(indexed),
      ...placeholdersHaveValues(indexed),
      ...placeholderValuesAreScalars(indexed),
      ...matrixKeysUsed(indexed),
      ...matrixFieldNotAlsoSet(indexed),
    ];
    if (itemFindings.length > 0) badItems.add(indexed.index);
    findings.addAll(itemFindings);
  }
  const sizeFindings = expansionWithinLimit(items);
  findings.addAll(sizeFindings);
  if (schedule.success) {
    findings.addAll(scheduleCron(schedule.data));
    findings.addAll(scheduleTimeZone(schedule.data));
  }

  // Expand, validate each search with the contract, normalise, find duplicates.
  const stats: PipelineStats = { items: rawItems.length, expanded: 0, unique: 0 };
  const mediaRequestedAt = new Map<MediaOption, Path>();
  /** Where the first search whose PDF pages no bound limits gets its scrape options. */
  let pdfUnboundedAt: Path | undefined;
  if (defaults.success && sizeFindings.length === 0) {
    // Each expanded search is checked as it is produced and then dropped: what is kept is one
    // entry per distinct request (its key, and where it was first expanded), findings and counts.
    const seen = new Map<string, number>();
    const starts = new ItemStarts();
    const duplicates = new Map<
      string,
      { path: Path; first: number; count: number; example: string }
    >();
    const normalise = createRequestNormaliser();
    for (const { index, item } of items) {
      if (badItems.has(index)) continue;
      starts.add(index, stats.expanded);
      const check = createSearchChecker(item, defaults.data, findings);
      for (const search of expandSearches(defaults.data, item, index)) {
        const ordinal = stats.expanded;
        stats.expanded += 1;
        const checked = check(search);
        if (checked === undefined) continue;
        const key = taskKey(normalise(checked));
        const firstOrdinal = seen.get(key);
        if (firstOrdinal === undefined) {
          seen.set(key, ordinal);
        } else {
          const first = starts.locate(firstOrdinal);
          const firstItem = first.itemIndex;
          const id = `${firstItem}>${index}`;
          const entry = duplicates.get(id);
          if (entry) entry.count += 1;
          else {
            const path: Path =
              firstItem === index ? ['searches', index, 'matrix'] : ['searches', index];
            const firstVars = describeVars(matrixVarsAt(byIndex.get(firstItem)!, first.offset));
            const example =
              search.vars === undefined
                ? ''
                : firstVars === ''
                  ? ` (${describeVars(search.vars)})`
                  : ` (${describeVars(search.vars)} repeats ${firstVars})`;
            duplicates.set(id, { path, first: firstItem, count: 1, example });
          }
        }
        if (pdfUnboundedAt === undefined && pdfPagesUnbounded(checked)) {
          pdfUnboundedAt = originOf(search, item, defaults.data, ['scrapeOptions']);
        }
        for (const { kind, at } of mediaFormats(search.request)) {
          if (!mediaRequestedAt.has(kind)) {
            mediaRequestedAt.set(kind, originOf(search, item, defaults.data, at));
          }
        }
      }
    }
    stats.unique = seen.size;
    for (const { path, first, count, example } of duplicates.values()) {
      const what = count === 1 ? 'a search that is' : `${count} searches that are`;
      const earlier =
        path[path.length - 1] === 'matrix'
          ? 'another combination of this matrix'
          : `searches[${first}]`;
      findings.add({
        code: 'DUPLICATE_SEARCH',
        severity: 'warning',
        path,
        message: `expands to ${what} the same request as ${earlier}${example}; planned once`,
      });
    }
  }
  const budget = isRecord(record.budget) ? record.budget : {};
  if (pdfUnboundedAt !== undefined && typeof budget.maxCredits === 'number') {
    findings.add({
      code: 'BUDGET_PDF_PAGES_UNBOUNDED',
      severity: 'warning',
      path: ['budget', 'maxCredits'],
      message: `a search (${pathToString(pdfUnboundedAt)}) asks for PDFs and scrapes them with no maxPages: each page beyond a PDF's first costs a credit no estimate foresees, so the run may spend past its budget; bound them with scrapeOptions.parsers: [{type: pdf, maxPages: N}]`,
    });
  }
  if (media.success) {
    findings.addAll(mediaMatchesFormats(media.data, mediaRequestedAt));
    findings.addAll(mediaDirInside(media.data));
  }

  const issues = findings.toIssues(fileName, yaml.locator);
  const errors = issues.some((issue) => issue.severity === 'error');
  if (errors || !whole.success) return { ok: false, issues };
  const value: Pipeline = {
    ...whole.data,
    searches: whole.data.searches.map((item, index) =>
      withMatrixInWrittenOrder(item, rawItems[index]),
    ),
  };
  return { ok: true, value, warnings: issues, stats };
}

/** Where each item's searches start among all expanded searches, in file order. */
class ItemStarts {
  private readonly ordinals: number[] = [];
  private readonly items: number[] = [];

  add(itemIndex: number, ordinal: number): void {
    this.ordinals.push(ordinal);
    this.items.push(itemIndex);
  }

  /** The item that expanded the search with this ordinal, and the search's index in it. */
  locate(ordinal: number): { itemIndex: number; offset: number } {
    let low = 0;
    let high = this.ordinals.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (this.ordinals[mid]! <= ordinal) low = mid;
      else high = mid - 1;
    }
    return { itemIndex: this.items[low]!, offset: ordinal - this.ordinals[low]! };
  }
}

/**
 * A checker for the searches of one item. When the query is filled from placeholders, the
 * rest of the request depends only on the matrix values of request fields: the whole request
 * is validated once per combination of those, and each further search checks its query alone.
 * (The contract's cross-field rules do not involve `query`.) What is kept per combination is
 * one byte; the validated requests of the most recent combinations are reused as they are.
 */
function createSearchChecker(
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

/**
 * Findings deduplicated by path, code and message; repeats from a matrix are counted. The
 * findings of one check (one search, or the file's schema) are one group: the same finding
 * twice in a group is one problem, not a repeat (zod reports two bounds of a number too large
 * for both the API and the safe integers), and the tighter bound is the one said.
 */
class FindingSet {
  private readonly entries = new Map<
    string,
    { finding: Finding; context: string; repeats: number }
  >();

  add(finding: Finding, context = ''): void {
    this.addGroup([{ finding, context }]);
  }

  addAll(findings: readonly Finding[]): void {
    this.addGroup(findings.map((finding) => ({ finding, context: '' })));
  }

  /** Findings of one check: repeats within the group merge; across groups they are counted. */
  addGroup(group: readonly { finding: Finding; context: string }[]): void {
    const merged = new Map<string, { finding: Finding; context: string }>();
    for (const { finding, context } of group) {
      const id = findingId(finding);
      const earlier = merged.get(id);
      if (earlier === undefined) merged.set(id, { finding, context });
      else earlier.finding = tighterBound(earlier.finding, finding);
    }
    for (const [id, { finding, context }] of merged) {
      const entry = this.entries.get(id);
      if (entry) entry.repeats += 1;
      else this.entries.set(id, { finding, context, repeats: 0 });
    }
  }

  toIssues(file: string, locator: Locator): Issue[] {
    const issues: Issue[] = [];
    for (const { finding, context, repeats } of this.entries.values()) {
      const more =
        repeats > 0 ? ` (and ${repeats} more combination${repeats === 1 ? '' : 's'})` : '';
      const position = locator.locate(finding.path, { atKey: finding.atKey === true });
      issues.push(
        toIssue({ ...finding, message: finding.message + context + more }, file, position),
      );
    }
    sortIssues(issues);
    if (issues.length <= MAX_ISSUES_PER_FILE) return issues;
    const shown = issues.slice(0, MAX_ISSUES_PER_FILE);
    shown.push({
      code: 'TOO_MANY_ISSUES',
      severity: 'error',
      file,
      line: 1,
      col: 1,
      path: '',
      message: `${issues.length - MAX_ISSUES_PER_FILE} more issues not shown`,
    });
    return shown;
  }
}

function findingId(finding: Finding): string {
  return `${pathToString(finding.path)}\u0000${finding.atKey === true}\u0000${finding.code}\u0000${finding.message}`;
}

const BOUND = /^(at most|less than|at least|more than) (-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)/i;

/**
 * Of two findings on one value that differ in the bound they allow ("at most 100" and "at most
 * 9007199254740991"), the one whose bound is tighter: that is the bound the value must meet.
 */
function tighterBound(a: Finding, b: Finding): Finding {
  const boundA = BOUND.exec(a.allowed ?? '');
  const boundB = BOUND.exec(b.allowed ?? '');
  if (boundA === null || boundB === null) return a;
  const upper = (word: string) => word === 'at most' || word === 'less than';
  if (upper(boundA[1]!) !== upper(boundB[1]!)) return a;
  const valueA = Number(boundA[2]);
  const valueB = Number(boundB[2]);
  return upper(boundA[1]!) ? (valueB < valueA ? b : a) : valueB > valueA ? b : a;
}

function toIssue(finding: Finding, file: string, position: { line: number; col: number }): Issue {
  const issue: Issue = {
    code: finding.code,
    severity: finding.severity,
    file,
    line: position.line,
    col: position.col,
    path: pathToString(finding.path),
    message: finding.message,
  };
  if (finding.received !== undefined) issue.received = finding.received;
  if (finding.allowed !== undefined) issue.allowed = finding.allowed;
  return issue;
}

/**
 * The schema lists matrix field keys before placeholder keys; expansion follows the order
 * the file wrote them in (first key outermost).
 */
function withMatrixInWrittenOrder(item: SearchItem, raw: unknown): SearchItem {
  const rawMatrix = isRecord(raw) ? raw.matrix : undefined;
  if (item.matrix === undefined || !isRecord(rawMatrix)) return item;
  const parsed = item.matrix as Record<string, unknown>;
  const ordered: Record<string, unknown> = {};
  for (const key of Object.keys(rawMatrix)) if (key in parsed) ordered[key] = parsed[key];
  return { ...item, matrix: ordered as SearchItem['matrix'] };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
