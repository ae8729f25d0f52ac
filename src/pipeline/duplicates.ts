/**
 * Expanded searches that repeat the request of an earlier one: found by key while validating,
 * reported as one warning per pair of items (and counted), since a plan runs each request once.
 */
import { describeVars, type ExpandedSearch, matrixVarsAt } from './expand.ts';
import type { FindingSet } from './finding-set.ts';
import type { Path } from './issues.ts';
import type { SearchItem } from './schema.ts';

/** Where each item's searches start among all expanded searches, in file order. */
export class ItemStarts {
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

/** Searches that repeat the request of an earlier one, grouped by (earlier item, item). */
export class DuplicateSearches {
  private readonly groups = new Map<
    string,
    { path: Path; first: number; count: number; example: string }
  >();

  constructor(private readonly byIndex: ReadonlyMap<number, SearchItem>) {}

  /** `search` of item `index` repeats the search at `first` (its item, and its offset there). */
  note(first: { itemIndex: number; offset: number }, index: number, search: ExpandedSearch): void {
    const firstItem = first.itemIndex;
    const id = `${firstItem}>${index}`;
    const entry = this.groups.get(id);
    if (entry) {
      entry.count += 1;
      return;
    }
    const path: Path = firstItem === index ? ['searches', index, 'matrix'] : ['searches', index];
    const firstVars = describeVars(matrixVarsAt(this.byIndex.get(firstItem)!, first.offset));
    const example =
      search.vars === undefined
        ? ''
        : firstVars === ''
          ? ` (${describeVars(search.vars)})`
          : ` (${describeVars(search.vars)} repeats ${firstVars})`;
    this.groups.set(id, { path, first: firstItem, count: 1, example });
  }

  /** One warning per group, in the order the groups were found. */
  addTo(findings: FindingSet): void {
    for (const { path, first, count, example } of this.groups.values()) {
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
}
