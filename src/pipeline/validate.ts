/**
 * Validation in steps: read -> YAML parse -> schema -> expand and normalise -> named rules ->
 * `{ok: true, value, warnings} | {ok: false, issues}`. Every problem of a file is reported at
 * once, each with its position; nothing here throws on bad input.
 */
import { pdfPagesUnbounded } from '../contract/index.ts';
import { DuplicateSearches, ItemStarts } from './duplicates.ts';
import { expandSearches, originOf } from './expand.ts';
import { FindingSet, toIssue } from './finding-set.ts';
import { type Issue, type Path, pathToString, sortIssues } from './issues.ts';
import { taskKey } from './keys.ts';
import { decodePipelineBytes, MAX_PIPELINE_BYTES, parseYaml, readPipelineText } from './load.ts';
import {
  type MediaOption,
  mediaDirInside,
  mediaFormats,
  mediaMatchesFormats,
} from './media-rules.ts';
import { createRequestNormaliser } from './plan.ts';
import {
  duplicateSearchIds,
  expansionWithinLimit,
  type IndexedItem,
  matrixFieldNotAlsoSet,
  matrixKeysUsed,
  placeholdersHaveValues,
  placeholderValuesAreScalars,
  queryPresent,
  scheduleCron,
  scheduleTimeZone,
} from './rules.ts';
import {
  type Defaults,
  DefaultsSchema,
  MediaSchema,
  type Pipeline,
  PipelineSchema,
  ScheduleSchema,
  type SearchItem,
  SearchItemSchema,
} from './schema.ts';
import { createSearchChecker } from './search-check.ts';
import type { PositionedFinding } from './yaml-refusals.ts';
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
  if (!yaml.ok) return yamlFailure(yaml.findings, fileName);
  const findings = new FindingSet();
  const data = yaml.data;

  // Schema, whole file.
  const whole = PipelineSchema.safeParse(data);
  if (!whole.success) findings.addAll(findingsFromZod(whole.error.issues, PipelineSchema, data));

  const parts = partsOf(data);
  const { badItems, sizeFindings } = checkAsWritten(parts, findings);
  const stats: PipelineStats = { items: parts.rawItems.length, expanded: 0, unique: 0 };
  const requested: Requested = { mediaAt: new Map(), pdfUnboundedAt: undefined };
  if (parts.defaults.success && sizeFindings.length === 0) {
    checkExpanded(parts, parts.defaults.data, badItems, { stats, requested, findings });
  }
  checkWhatIsRequested(parts, requested, findings);

  const issues = findings.toIssues(fileName, yaml.locator);
  const errors = issues.some((issue) => issue.severity === 'error');
  if (errors || !whole.success) return { ok: false, issues };
  const value: Pipeline = {
    ...whole.data,
    searches: whole.data.searches.map((item, index) =>
      withMatrixInWrittenOrder(item, parts.rawItems[index]),
    ),
  };
  return { ok: true, value, warnings: issues, stats };
}

function yamlFailure(found: readonly PositionedFinding[], fileName: string): ValidationResult {
  const issues = found.map(({ line, col, ...finding }) =>
    toIssue(finding, fileName, { line, col }),
  );
  return { ok: false, issues: sortIssues(issues) };
}

/** The parts of the file that are valid on their own, so the rest of it is still checked. */
function partsOf(data: unknown) {
  const record = isRecord(data) ? data : {};
  const defaults =
    record.defaults === undefined
      ? { success: true as const, data: undefined }
      : DefaultsSchema.safeParse(record.defaults);
  const rawItems: unknown[] = Array.isArray(record.searches) ? record.searches : [];
  const items: IndexedItem[] = [];
  rawItems.forEach((raw, index) => {
    const parsed = SearchItemSchema.safeParse(raw);
    if (parsed.success) items.push({ index, item: withMatrixInWrittenOrder(parsed.data, raw) });
  });
  return {
    record,
    defaults,
    rawItems,
    items,
    byIndex: new Map(items.map(({ index, item }) => [index, item])),
    schedule: ScheduleSchema.optional().safeParse(record.schedule),
    media: MediaSchema.optional().safeParse(record.media),
  };
}

type FileParts = ReturnType<typeof partsOf>;

/**
 * Named rules on the file as written. Returns the items that broke one (not expanded) and
 * the findings of the expansion's size (none: the file may be expanded).
 */
function checkAsWritten(parts: FileParts, findings: FindingSet) {
  findings.addAll(duplicateSearchIds(parts.items));
  const badItems = new Set<number>();
  for (const indexed of parts.items) {
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
  const sizeFindings = expansionWithinLimit(parts.items);
  findings.addAll(sizeFindings);
  if (parts.schedule.success) {
    findings.addAll(scheduleCron(parts.schedule.data));
    findings.addAll(scheduleTimeZone(parts.schedule.data));
  }
  return { badItems, sizeFindings };
}

/** What the expanded searches ask for that file-wide rules check. */
interface Requested {
  /** Where the first search asking for each kind of media asks for it. */
  mediaAt: Map<MediaOption, Path>;
  /** Where the first search whose PDF pages no bound limits gets its scrape options. */
  pdfUnboundedAt: Path | undefined;
}

/**
 * Expand, validate each search with the contract, normalise, find duplicates. Each expanded
 * search is checked as it is produced and then dropped: what is kept is one entry per distinct
 * request (its key, and where it was first expanded), findings and counts.
 */
function checkExpanded(
  parts: FileParts,
  defaults: Defaults | undefined,
  badItems: ReadonlySet<number>,
  out: { stats: PipelineStats; requested: Requested; findings: FindingSet },
): void {
  const { stats, requested, findings } = out;
  const seen = new Map<string, number>();
  const starts = new ItemStarts();
  const duplicates = new DuplicateSearches(parts.byIndex);
  const normalise = createRequestNormaliser();
  for (const { index, item } of parts.items) {
    if (badItems.has(index)) continue;
    starts.add(index, stats.expanded);
    const check = createSearchChecker(item, defaults, findings);
    for (const search of expandSearches(defaults, item, index)) {
      const ordinal = stats.expanded;
      stats.expanded += 1;
      const checked = check(search);
      if (checked === undefined) continue;
      const key = taskKey(normalise(checked));
      const firstOrdinal = seen.get(key);
      if (firstOrdinal === undefined) seen.set(key, ordinal);
      else duplicates.note(starts.locate(firstOrdinal), index, search);
      if (requested.pdfUnboundedAt === undefined && pdfPagesUnbounded(checked)) {
        requested.pdfUnboundedAt = originOf(search, item, defaults, ['scrapeOptions']);
      }
      for (const { kind, at } of mediaFormats(search.request)) {
        if (!requested.mediaAt.has(kind)) {
          requested.mediaAt.set(kind, originOf(search, item, defaults, at));
        }
      }
    }
  }
  stats.unique = seen.size;
  duplicates.addTo(findings);
}

/** File-wide rules on what the searches ask for: the budget's PDF pages, the media saved. */
function checkWhatIsRequested(parts: FileParts, requested: Requested, findings: FindingSet) {
  const budget = isRecord(parts.record.budget) ? parts.record.budget : {};
  if (requested.pdfUnboundedAt !== undefined && typeof budget.maxCredits === 'number') {
    findings.add({
      code: 'BUDGET_PDF_PAGES_UNBOUNDED',
      severity: 'warning',
      path: ['budget', 'maxCredits'],
      message: `a search (${pathToString(requested.pdfUnboundedAt)}) asks for PDFs and scrapes them with no maxPages: each page beyond a PDF's first costs a credit no estimate foresees, so the run may spend past its budget; bound them with scrapeOptions.parsers: [{type: pdf, maxPages: N}]`,
    });
  }
  if (parts.media.success) {
    findings.addAll(mediaMatchesFormats(parts.media.data, requested.mediaAt));
    findings.addAll(mediaDirInside(parts.media.data));
  }
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
