/**
 * Matrix expansion and defaults: one search item becomes one search, or one search per
 * combination of its matrix values (the cartesian product, first key outermost).
 *
 * Precedence: `defaults` < the item's own fields < the matrix values. `scrapeOptions` merge
 * field by field at each step; every other field is replaced as a whole.
 */
import type { Path } from './issues.ts';
import {
  fillTemplate,
  parseTemplate,
  renderPlaceholderValue,
  type Template,
} from './placeholders.ts';
import { isRequestField } from './schema.ts';

type Json = Record<string, unknown>;

/** One search produced by expanding an item (before validation and defaults of the contract). */
export interface ExpandedSearch {
  /** Index of the item in `searches`. */
  itemIndex: number;
  /** For each matrix key (in written order), the index of the chosen value. */
  choice: readonly number[] | undefined;
  /** Matrix values of this combination by key. */
  vars: Readonly<Json> | undefined;
  /** The merged request: defaults, item fields, matrix fields, query filled. */
  request: Json;
}

const ITEM_ONLY_KEYS = new Set(['id', 'tags', 'matrix']);

/** Number of searches an item expands to (1 without a matrix). */
export function matrixSize(
  matrix: Readonly<Record<string, readonly unknown[] | undefined>> | undefined,
): number {
  if (matrix === undefined) return 1;
  let size = 1;
  for (const values of Object.values(matrix)) size *= values?.length ?? 1;
  return size;
}

/** `defaults` then the item's request fields, scrapeOptions merged field by field. */
export function mergeItem(defaults: Readonly<Json> | undefined, item: Readonly<Json>): Json {
  const merged: Json = { ...defaults };
  for (const key of Object.keys(item)) {
    if (ITEM_ONLY_KEYS.has(key)) continue;
    const value = item[key];
    if (value === undefined) continue;
    merged[key] = key === 'scrapeOptions' ? mergeScrapeOptions(merged.scrapeOptions, value) : value;
  }
  return merged;
}

function mergeScrapeOptions(base: unknown, override: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(override)) return override;
  return { ...base, ...override };
}

function isPlainObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What expanding one item needs, worked out once for all its searches. */
interface Expansion {
  itemIndex: number;
  /** `defaults` then the item's request fields. */
  base: Json;
  template: Template | undefined;
  /** The query when it has no placeholders (its {{ and }} are braces). */
  literal: string | undefined;
  /** Matrix keys in written order, and their lists; empty without a matrix. */
  keys: string[];
  lists: (readonly unknown[])[];
  /** Whether each key is a request field. */
  fieldKeys: boolean[];
}

function prepare(
  defaults: Readonly<Json> | undefined,
  item: Readonly<Json>,
  itemIndex: number,
): Expansion {
  const template: Template | undefined =
    typeof item.query === 'string' ? parseTemplate(item.query) : undefined;
  const matrix = item.matrix as Readonly<Record<string, readonly unknown[]>> | undefined;
  const keys =
    matrix === undefined ? [] : Object.keys(matrix).filter((key) => matrix[key] !== undefined);
  return {
    itemIndex,
    base: mergeItem(defaults, item),
    template,
    literal:
      template !== undefined && template.names.length === 0
        ? fillTemplate(template, (name) => `{${name}}`)
        : undefined,
    keys,
    lists: keys.map((key) => matrix![key]!),
    fieldKeys: keys.map((key) => isRequestField(key)),
  };
}

/** The search of a combination of matrix values (`choice`: an index into each list). */
function searchOf(x: Expansion, choice: readonly number[]): ExpandedSearch {
  const { keys, lists, fieldKeys, template, literal } = x;
  const vars: Json = {};
  // Not `{ ...base }`: V8 gives a spread copy that then gains a property (the matrix fields
  // below) a hidden class of its own, so every search would leave garbage in the old space.
  const request: Json = Object.assign({}, x.base);
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    const value = lists[k]![choice[k]!];
    vars[key] = value;
    if (fieldKeys[k]) {
      request[key] =
        key === 'scrapeOptions' ? mergeScrapeOptions(request.scrapeOptions, value) : value;
    }
  }
  if (literal !== undefined) request.query = literal;
  else if (template !== undefined) {
    request.query = fillTemplate(template, (name) =>
      Object.hasOwn(vars, name) ? renderPlaceholderValue(vars[name]) : `{${name}}`,
    );
  }
  return { itemIndex: x.itemIndex, choice: [...choice], vars, request };
}

/** The one search of an item without matrix keys. */
function onlySearchOf(x: Expansion): ExpandedSearch {
  const request = { ...x.base };
  if (x.template !== undefined) {
    request.query = x.literal ?? fillTemplate(x.template, (name) => `{${name}}`);
  }
  return { itemIndex: x.itemIndex, choice: undefined, vars: undefined, request };
}

/**
 * The searches of an item, one at a time, in a stable order (the last matrix key turns
 * fastest). The item must have passed the item schema; values are not validated here.
 */
export function* expandSearches(
  defaults: Readonly<Json> | undefined,
  item: Readonly<Json>,
  itemIndex: number,
): Generator<ExpandedSearch, void, undefined> {
  const x = prepare(defaults, item, itemIndex);
  if (x.keys.length === 0) {
    yield onlySearchOf(x);
    return;
  }
  const { lists } = x;
  if (lists.some((list) => list.length === 0)) return;
  const choice = new Array<number>(lists.length).fill(0);
  for (;;) {
    yield searchOf(x, choice);
    // Odometer: the last key turns fastest.
    let k = lists.length - 1;
    while (k >= 0) {
      choice[k]! += 1;
      if (choice[k]! < lists[k]!.length) break;
      choice[k] = 0;
      k -= 1;
    }
    if (k < 0) return;
  }
}

/**
 * The searches of chosen combinations of an item's matrix values (`choice`: an index into each
 * list, keys in written order), as `expandSearches` makes them. Without matrix keys, its one
 * search, whatever the choices.
 */
export function* searchesAt(
  defaults: Readonly<Json> | undefined,
  item: Readonly<Json>,
  itemIndex: number,
  choices: Iterable<readonly number[]>,
): Generator<ExpandedSearch, void, undefined> {
  const x = prepare(defaults, item, itemIndex);
  if (x.keys.length === 0) {
    yield onlySearchOf(x);
    return;
  }
  for (const choice of choices) yield searchOf(x, choice);
}

/** The matrix values of the item's search at `offset` in `expandSearches` order. */
export function matrixVarsAt(item: Readonly<Json>, offset: number): Readonly<Json> | undefined {
  const matrix = item.matrix as Readonly<Record<string, readonly unknown[]>> | undefined;
  if (matrix === undefined) return undefined;
  const keys = Object.keys(matrix).filter((key) => matrix[key] !== undefined);
  if (keys.length === 0) return undefined;
  const values: unknown[] = new Array(keys.length);
  let rest = offset;
  for (let k = keys.length - 1; k >= 0; k--) {
    const list = matrix[keys[k]!]!;
    values[k] = list[rest % list.length];
    rest = Math.floor(rest / list.length);
  }
  const vars: Json = {};
  keys.forEach((key, k) => {
    vars[key] = values[k];
  });
  return vars;
}

/**
 * Where in the file a part of an expanded request was written: the matrix value that set it,
 * the item's field, or `defaults`. Falls back to the item itself.
 */
export function originOf(
  search: ExpandedSearch,
  item: Readonly<Json>,
  defaults: Readonly<Json> | undefined,
  requestPath: Path,
): Path {
  const itemPath: Path = ['searches', search.itemIndex];
  const [top, field] = requestPath;
  if (typeof top !== 'string') return itemPath;
  const matrix = item.matrix as Readonly<Record<string, readonly unknown[]>> | undefined;
  if (matrix !== undefined && search.choice !== undefined && isRequestField(top) && top in matrix) {
    const keyIndex = Object.keys(matrix).indexOf(top);
    const valueIndex = search.choice[keyIndex] ?? 0;
    const value = matrix[top]?.[valueIndex];
    const fromMatrix =
      top !== 'scrapeOptions' ||
      field === undefined ||
      (isPlainObject(value) && typeof field === 'string' && field in value);
    if (fromMatrix) return [...itemPath, 'matrix', top, valueIndex, ...requestPath.slice(1)];
  }
  if (top === 'scrapeOptions' && typeof field === 'string') {
    const own = item.scrapeOptions;
    if (isPlainObject(own) && field in own) return [...itemPath, ...requestPath];
    const shared = defaults?.scrapeOptions;
    if (isPlainObject(shared) && field in shared) return ['defaults', ...requestPath];
    return isPlainObject(own) ? [...itemPath, 'scrapeOptions'] : itemPath;
  }
  if (top in item) return [...itemPath, ...requestPath];
  if (defaults !== undefined && top in defaults) return ['defaults', ...requestPath];
  return itemPath;
}

/** `topic=ai, country=DE`: the matrix combination, for messages. */
export function describeVars(vars: Readonly<Json> | undefined): string {
  if (vars === undefined) return '';
  return Object.entries(vars)
    .map(
      ([key, value]) =>
        `${key}=${typeof value === 'object' ? JSON.stringify(value) : String(value)}`,
    )
    .join(', ');
}
