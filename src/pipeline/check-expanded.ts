/**
 * Checking the searches a file expands to: each validated with the contract, normalised and
 * keyed, duplicates found; or, above `checkEachUpTo` searches, a sample of them (sample.ts),
 * without looking for duplicates. How many searches there are is the product of each matrix's
 * lists, counted without making them. Each search is checked as it is produced and dropped:
 * what is kept is one entry per distinct request (its key, and where it was first expanded),
 * findings and counts.
 */
import { pdfPagesUnbounded, type SearchRequest } from '../contract/index.ts';
import { DuplicateSearches, ItemStarts } from './duplicates.ts';
import { type ExpandedSearch, expandSearches, matrixSize, originOf, searchesAt } from './expand.ts';
import type { FindingSet } from './finding-set.ts';
import type { Path } from './issues.ts';
import { canonicalJson, hashCanonical } from './keys.ts';
import { type MediaOption, mediaFormats } from './media-rules.ts';
import { createRequestNormaliser } from './plan.ts';
import type { IndexedItem } from './rules.ts';
import { type SampleBudget, sampleChoices } from './sample.ts';
import type { Defaults, SearchItem } from './schema.ts';
import { createSearchChecker } from './search-check.ts';

/** Counts found while validating. */
export interface PipelineStats {
  /** Entries in `searches`. */
  items: number;
  /** Searches after matrix expansion. */
  expanded: number;
  /** Distinct searches (what a plan holds); all of `expanded` when a sample was checked. */
  unique: number;
}

/** How the searches were checked, and what a run's task rows would hold. */
export interface CheckSummary {
  /** Searches checked one by one. */
  checked: number;
  /** Whether every search was checked and duplicates counted (else a sample was checked). */
  everySearch: boolean;
  /**
   * Mean characters of a task row's text (the request's JSON, the search id and the tags' JSON)
   * over the distinct searches checked; 0 when none was valid.
   */
  taskTextChars: number;
}

export interface CheckOptions {
  /** Check every search when the file expands to at most this many; else a sample. */
  checkEachUpTo: number;
  /** Told every few thousand searches how many of how many were checked, and at the end. */
  onProgress?: ((checked: number, total: number) => void) | undefined;
}

/** What the expanded searches ask for that file-wide rules check. */
export interface Requested {
  /** Where the first search asking for each kind of media asks for it. */
  mediaAt: Map<MediaOption, Path>;
  /** Where the first search whose PDF pages no bound limits gets its scrape options. */
  pdfUnboundedAt: Path | undefined;
}

/** Pairs of request-field values checked in a file checked by sample. */
const SAMPLE_MAX_PAIRS = 100_000;
/** Searches between two progress reports. */
const PROGRESS_EVERY = 8192;

/** Check the searches of `items` (those that broke no rule as written). */
export function checkExpanded(
  items: readonly IndexedItem[],
  defaults: Defaults | undefined,
  byIndex: ReadonlyMap<number, SearchItem>,
  findings: FindingSet,
  options: CheckOptions,
): { expanded: number; unique: number; requested: Requested; summary: CheckSummary } {
  const expanded = items.reduce((sum, { item }) => sum + matrixSize(matrixOf(item)), 0);
  const everySearch = expanded <= options.checkEachUpTo;
  const walk = everySearch ? everySearchOf(items, defaults, expanded) : sampleOf(items, defaults);
  const requested: Requested = { mediaAt: new Map(), pdfUnboundedAt: undefined };
  const seen = new Map<string, number>();
  const starts = new ItemStarts();
  const duplicates = new DuplicateSearches(byIndex);
  const normalise = createRequestNormaliser();
  let checked = 0;
  let textChars = 0;
  let texts = 0;
  for (const { index, item, searches } of walk.items) {
    starts.add(index, checked);
    const check = createSearchChecker(item, defaults, findings);
    const rowChars = (item.id?.length ?? 0) + (item.tags ? JSON.stringify(item.tags).length : 0);
    for (const search of searches) {
      const ordinal = checked;
      checked += 1;
      if (checked % PROGRESS_EVERY === 0) options.onProgress?.(checked, walk.total);
      const valid = check(search);
      if (valid === undefined) continue;
      const canonical = canonicalJson(normalise(valid));
      const key = everySearch ? hashCanonical(canonical) : undefined;
      const firstOrdinal = key === undefined ? undefined : seen.get(key);
      if (firstOrdinal !== undefined) duplicates.note(starts.locate(firstOrdinal), index, search);
      else {
        if (key !== undefined) seen.set(key, ordinal);
        textChars += canonical.length + rowChars;
        texts += 1;
      }
      noteRequested(requested, search, valid, item, defaults);
    }
  }
  options.onProgress?.(checked, walk.total);
  duplicates.addTo(findings);
  return {
    expanded,
    unique: everySearch ? seen.size : expanded,
    requested,
    summary: { checked, everySearch, taskTextChars: texts === 0 ? 0 : textChars / texts },
  };
}

interface Walk {
  /** Searches to check: all of them, or the sample's. */
  total: number;
  items: Iterable<{ index: number; item: SearchItem; searches: Iterable<ExpandedSearch> }>;
}

function everySearchOf(
  items: readonly IndexedItem[],
  defaults: Defaults | undefined,
  total: number,
): Walk {
  return {
    total,
    items: items.map(({ index, item }) => ({
      index,
      item,
      searches: expandSearches(defaults, item as Record<string, unknown>, index),
    })),
  };
}

function sampleOf(items: readonly IndexedItem[], defaults: Defaults | undefined): Walk {
  const budget: SampleBudget = { pairsLeft: SAMPLE_MAX_PAIRS };
  const sampled = items.map(({ index, item }) => {
    const size = matrixSize(matrixOf(item));
    // No matrix keys: one search, whatever the choices. An empty list: no search at all.
    const choices = size === 0 ? [] : sampleChoices(item, budget);
    const count = size === 0 ? 0 : Math.max(choices.length, 1);
    return { index, item, choices, count };
  });
  return {
    total: sampled.reduce((sum, { count }) => sum + count, 0),
    items: sampled.map(({ index, item, choices, count }) => ({
      index,
      item,
      searches:
        count === 0 ? [] : searchesAt(defaults, item as Record<string, unknown>, index, choices),
    })),
  };
}

/** The first search asking for each kind of media, and for PDFs no bound limits. */
function noteRequested(
  requested: Requested,
  search: ExpandedSearch,
  valid: SearchRequest,
  item: SearchItem,
  defaults: Defaults | undefined,
): void {
  if (requested.pdfUnboundedAt === undefined && pdfPagesUnbounded(valid)) {
    requested.pdfUnboundedAt = originOf(search, item, defaults, ['scrapeOptions']);
  }
  for (const { kind, at } of mediaFormats(search.request)) {
    if (!requested.mediaAt.has(kind)) {
      requested.mediaAt.set(kind, originOf(search, item, defaults, at));
    }
  }
}

function matrixOf(item: SearchItem) {
  return item.matrix as Record<string, readonly unknown[] | undefined> | undefined;
}
