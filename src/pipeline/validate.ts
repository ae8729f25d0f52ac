/**
 * Validation in steps: read -> YAML parse -> schema -> expand and normalise -> named rules ->
 * `{ok: true, value, warnings} | {ok: false, issues}`. Every problem of a file is reported at
 * once, each with its position; nothing here throws on bad input.
 */
import {
  type CheckOptions,
  type CheckSummary,
  checkExpanded,
  type PipelineStats,
  type Requested,
} from './check-expanded.ts';
import { capIssues, FindingSet, toIssue } from './finding-set.ts';
import { type Issue, pathToString, sortIssues } from './issues.ts';
import { decodePipelineBytes, MAX_PIPELINE_BYTES, parseYaml, readPipelineText } from './load.ts';
import { mediaDirInside, mediaMatchesFormats } from './media-rules.ts';
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
  DefaultsSchema,
  MediaSchema,
  type Pipeline,
  PipelineSchema,
  ScheduleSchema,
  type SearchItem,
  SearchItemSchema,
} from './schema.ts';
import type { PositionedFinding } from './yaml-refusals.ts';
import { findingsFromZod } from './zod-issues.ts';

export type { CheckSummary, PipelineStats };

export type ValidationResult =
  | { ok: true; value: Pipeline; warnings: Issue[]; stats: PipelineStats; check: CheckSummary }
  | { ok: false; issues: Issue[] };

export interface ValidateOptions {
  /**
   * Check every search a file expands to (and count its duplicates) when it expands to at most
   * this many; above it, check a sample of them (src/pipeline/sample.ts). Default: every search.
   */
  checkEachUpTo?: number;
  /** Told every few thousand searches how many of how many were checked. */
  onProgress?: CheckOptions['onProgress'];
}

/** Read, parse and validate a pipeline file. Never throws on bad input. */
export async function loadPipelineFile(
  path: string,
  options: ValidateOptions = {},
): Promise<ValidationResult> {
  const read = await readPipelineText(path, MAX_PIPELINE_BYTES);
  if (!read.ok) return { ok: false, issues: read.issues };
  return parsePipeline(read.text, path, options);
}

/** Validate raw bytes of a pipeline file (UTF-8 expected). */
export function parsePipelineBytes(bytes: Uint8Array, fileName: string): ValidationResult {
  const decoded = decodePipelineBytes(bytes, fileName);
  if (!decoded.ok) return { ok: false, issues: decoded.issues };
  return parsePipeline(decoded.text, fileName);
}

/** Validate the text of a pipeline file; `fileName` is used in issue positions. */
export function parsePipeline(
  text: string,
  fileName: string,
  options: ValidateOptions = {},
): ValidationResult {
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
  let requested: Requested = { mediaAt: new Map(), pdfUnboundedAt: undefined };
  let check: CheckSummary = { checked: 0, everySearch: true, taskTextChars: 0 };
  if (parts.defaults.success && sizeFindings.length === 0) {
    const items = parts.items.filter(({ index }) => !badItems.has(index));
    const done = checkExpanded(items, parts.defaults.data, parts.byIndex, findings, {
      checkEachUpTo: options.checkEachUpTo ?? Number.POSITIVE_INFINITY,
      onProgress: options.onProgress,
    });
    stats.expanded = done.expanded;
    stats.unique = done.unique;
    requested = done.requested;
    check = done.summary;
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
  return { ok: true, value, warnings: issues, stats, check };
}

/** YAML problems as issues: one per place and problem (the parser may repeat one), capped. */
function yamlFailure(found: readonly PositionedFinding[], fileName: string): ValidationResult {
  const seen = new Set<string>();
  const issues: Issue[] = [];
  for (const { line, col, ...finding } of found) {
    const id = `${line}:${col}\u0000${finding.code}\u0000${finding.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    issues.push(toIssue(finding, fileName, { line, col }));
  }
  return { ok: false, issues: capIssues(sortIssues(issues), fileName) };
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
