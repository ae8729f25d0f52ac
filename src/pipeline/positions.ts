/**
 * Source positions: maps a path in a YAML document (`['searches', 3, 'limit']`) to the line
 * and column where it is written. Paths that go deeper than the document (a missing key)
 * point at the deepest node that exists.
 */
import { type Document, isMap, isPair, isScalar, isSeq, type LineCounter, type Node } from 'yaml';
import type { Path } from './issues.ts';

export interface Position {
  /** 1-based. */
  line: number;
  /** 1-based. */
  col: number;
}

export const START: Position = { line: 1, col: 1 };

export interface Locator {
  /** Where the value at `path` is written (or the key, with `atKey`). */
  locate(path: Path, options?: { atKey?: boolean }): Position;
  /** Position of a character offset in the source. */
  at(offset: number): Position;
}

export function createLocator(doc: Document | undefined, lineCounter: LineCounter): Locator {
  const at = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(Math.max(0, offset));
    return { line, col };
  };
  return {
    at,
    locate(path, options = {}) {
      if (doc === undefined) return START;
      const offset = findOffset(doc.contents as Node | null, path, options.atKey === true);
      return offset === undefined ? START : at(offset);
    },
  };
}

function findOffset(root: Node | null, path: Path, atKey: boolean): number | undefined {
  let node: Node | null = root;
  let offset = node?.range?.[0];
  for (let i = 0; i < path.length; i++) {
    const segment = path[i]!;
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((item) => isPair(item) && keyOf(item.key) === String(segment));
      if (pair === undefined) return offset;
      const keyNode = pair.key as Node | null;
      const valueNode = pair.value as Node | null;
      const keyOffset = keyNode?.range?.[0];
      if (last && atKey) return keyOffset ?? offset;
      // A key written without a value (`limit:`) points at the key.
      const valueOffset = valueNode?.range?.[0];
      offset = valueOffset ?? keyOffset ?? offset;
      if (valueNode === null || valueOffset === undefined) return offset;
      node = valueNode;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment] as Node | null | undefined;
      const itemOffset = item?.range?.[0];
      if (item === undefined || item === null || itemOffset === undefined) return offset;
      offset = itemOffset;
      node = item;
    } else {
      return offset;
    }
  }
  return offset;
}

function keyOf(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return undefined;
}
