/**
 * The searches checked of a file too large to check each one: chosen so that every rule that
 * fails for some search fails for one of them, as far as a bounded number allows.
 *
 * - Every value of every matrix key, in a search of its own (a value's own problems, and the
 *   media and PDF settings of each scrapeOptions value).
 * - Every pair of values of two request-field keys, while the pairs fit `maxPairs` (the
 *   contract's cross-field rules relate two fields: includeDomains and excludeDomains).
 * - The longest query (too long for one search is too long for this one), and a blank query
 *   when one can be made.
 *
 * A combination is an index into each matrix list, keys in written order; they are checked in
 * the order the item expands to, so a problem is named with the first sampled search it has.
 */
import { parseTemplate, renderPlaceholderValue } from './placeholders.ts';
import { isRequestField, type SearchItem } from './schema.ts';

export interface SampleBudget {
  /** Pairs of request-field values still to be checked in this file. */
  pairsLeft: number;
}

/** The combinations checked of an item (none for an item without matrix keys). */
export function sampleChoices(item: SearchItem, budget: SampleBudget): number[][] {
  const matrix = item.matrix as Record<string, readonly unknown[] | undefined> | undefined;
  const keys =
    matrix === undefined ? [] : Object.keys(matrix).filter((k) => matrix[k] !== undefined);
  const lists = keys.map((key) => matrix![key]!);
  if (keys.length === 0 || lists.some((list) => list.length === 0)) return [];
  const seen = new Set<string>();
  const choices: number[][] = [];
  const add = (choice: number[]) => {
    const id = choice.join(',');
    if (seen.has(id)) return;
    seen.add(id);
    choices.push(choice);
  };
  const longest = Math.max(...lists.map((list) => list.length));
  for (let i = 0; i < longest; i++) add(lists.map((list) => i % list.length));
  for (const choice of queryExtremes(item.query, keys, lists)) add(choice);
  for (const choice of fieldPairs(keys, lists, budget)) add(choice);
  return choices.sort(inExpansionOrder);
}

/** The order `expandSearches` makes combinations in: the first key outermost. */
function inExpansionOrder(a: readonly number[], b: readonly number[]): number {
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return a[k]! - b[k]!;
  return 0;
}

/** The combination of the longest query, and one of a blank query if there is one. */
function queryExtremes(
  query: string | undefined,
  keys: readonly string[],
  lists: readonly (readonly unknown[])[],
): number[][] {
  if (query === undefined) return [];
  const template = parseTemplate(query);
  if (template.names.length === 0) return [];
  const used = new Set(template.names);
  const longest = keys.map((key, k) => (used.has(key) ? indexOfLongest(lists[k]!) : 0));
  const blankLiterals = template.literals.every((literal) => literal.trim() === '');
  const blank = keys.map((key, k) =>
    used.has(key) ? lists[k]!.findIndex((value) => renderPlaceholderValue(value).trim() === '') : 0,
  );
  return blankLiterals && !blank.includes(-1) ? [longest, blank] : [longest];
}

function indexOfLongest(list: readonly unknown[]): number {
  let best = 0;
  for (let i = 1; i < list.length; i++) {
    if (renderPlaceholderValue(list[i]).length > renderPlaceholderValue(list[best]).length) {
      best = i;
    }
  }
  return best;
}

/** Every pair of values of two request-field keys (the other keys at their first value). */
function* fieldPairs(
  keys: readonly string[],
  lists: readonly (readonly unknown[])[],
  budget: SampleBudget,
): Generator<number[]> {
  const fields = keys.flatMap((key, k) => (isRequestField(key) ? [k] : []));
  for (let a = 0; a < fields.length; a++) {
    for (let b = a + 1; b < fields.length; b++) {
      const ka = fields[a]!;
      const kb = fields[b]!;
      const pairs = lists[ka]!.length * lists[kb]!.length;
      if (pairs > budget.pairsLeft) continue;
      budget.pairsLeft -= pairs;
      for (let va = 0; va < lists[ka]!.length; va++) {
        for (let vb = 0; vb < lists[kb]!.length; vb++) {
          const choice = new Array<number>(keys.length).fill(0);
          choice[ka] = va;
          choice[kb] = vb;
          yield choice;
        }
      }
    }
  }
}
