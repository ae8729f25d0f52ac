/**
 * What the YAML parser accepts and a pipeline file does not, found node by node: aliases (no
 * alias bombs), explicit tags (no custom types), keys written as a list or mapping (plain
 * data has text keys), and the key `__proto__` (the schema's objects and records drop it: a
 * matrix key or header so named would vanish without a word). Each is reported where it is
 * written. (`constructor` and `prototype` are kept as any other key.)
 */
import {
  type Document,
  isAlias,
  isCollection,
  isMap,
  isPair,
  isScalar,
  isSeq,
  type Node,
  type Pair,
  visit,
} from 'yaml';
import type { Finding, PathSegment } from './issues.ts';
import type { Locator } from './positions.ts';

/** A finding whose position is already known (YAML syntax problems have no document path). */
export interface PositionedFinding extends Finding {
  line: number;
  col: number;
}

/** The aliases, tags and collection keys of `doc`, in document order. */
export function refusedNodes(doc: Document, text: string, locator: Locator): PositionedFinding[] {
  const findings: PositionedFinding[] = [];
  visit(doc, {
    Alias(_key, node) {
      findings.push(
        positioned(
          'YAML_ALIAS',
          `YAML aliases are not supported (*${node.source}); use "defaults:" to share settings`,
          locator.at(node.range?.[0] ?? 0),
        ),
      );
    },
    Pair(_key, pair, ancestors) {
      if (isScalar(pair.key) && pair.key.value === PROTO_KEY) {
        const parentPath = documentPath(ancestors, text);
        if (parentPath !== undefined) findings.push(protoKey(pair.key, parentPath, locator));
        return;
      }
      // A key written as a list or mapping (`{topic}:`, `? [k]`) cannot be a key of plain data:
      // said here, at the key, before toJS would stringify it (and print a Node warning).
      if (!isCollection(pair.key)) return;
      const parentPath = documentPath(ancestors, text);
      if (parentPath === undefined) return; // inside a key already reported
      findings.push(collectionKey(text, pair.key, parentPath, locator));
    },
    Node(_key, node: Node) {
      if (isAlias(node) || node.tag === undefined) return;
      findings.push(
        positioned(
          'YAML_TAG',
          `YAML tags are not supported (${node.tag}); write a plain value`,
          locator.at(tagOffset(text, node.range?.[0] ?? 0)),
        ),
      );
    },
  });
  return findings;
}

export function positioned(
  code: string,
  message: string,
  position: { line: number; col: number },
  extra: Partial<Finding> = {},
): PositionedFinding {
  return { code, severity: 'error', path: [], message, ...extra, ...position };
}

/**
 * The document path of the node whose ancestors (from the document down) are `ancestors`, or
 * undefined when it lies inside a key.
 */
function documentPath(
  ancestors: readonly (Document | Node | Pair)[],
  text: string,
): PathSegment[] | undefined {
  const path: PathSegment[] = [];
  for (let i = 0; i < ancestors.length - 1; i++) {
    const node = ancestors[i]!;
    const child = ancestors[i + 1];
    if (isPair(node)) {
      if (child === node.key) return undefined;
      path.push(isScalar(node.key) ? String(node.key.value) : sourceOf(text, node.key as Node));
    } else if (isSeq(node)) {
      path.push(node.items.indexOf(child));
    }
  }
  return path;
}

const PROTO_KEY = '__proto__';

/** The key `__proto__`, at the key. */
function protoKey(key: Node, parentPath: PathSegment[], locator: Locator): PositionedFinding {
  const inMatrix = parentPath[parentPath.length - 1] === 'matrix';
  return positioned(
    'YAML_KEY_RESERVED',
    `the key "${PROTO_KEY}" is reserved in JavaScript and would be dropped without a word; ${inMatrix ? 'name the placeholder otherwise' : 'rename it'}`,
    locator.at(key.range?.[0] ?? 0),
    { path: [...parentPath, PROTO_KEY] },
  );
}

/** The problem of a key written as a YAML list or mapping, at the key. */
function collectionKey(
  text: string,
  key: Node,
  parentPath: PathSegment[],
  locator: Locator,
): PositionedFinding {
  const written = sourceOf(text, key);
  const kind = isMap(key) ? 'a YAML mapping' : 'a YAML list';
  const name = singleName(key);
  const inMatrix = parentPath[parentPath.length - 1] === 'matrix';
  const advice =
    name === undefined
      ? 'write the key as a word'
      : `write "${name}:"${inMatrix && isMap(key) ? ' (a matrix key names its placeholder without braces)' : ''}`;
  return positioned(
    'YAML_KEY_NOT_TEXT',
    `a key must be plain text, not ${kind}: ${advice}`,
    locator.at(key.range?.[0] ?? 0),
    { path: [...parentPath, written] },
  );
}

/** `topic` for `{topic}` or `[topic]`: the one plain word a collection key holds, if any. */
function singleName(key: Node): string | undefined {
  if (isMap(key) && key.items.length === 1) {
    const only = key.items[0]!;
    const value = only.value;
    const empty = value === null || (isScalar(value) && value.value === null);
    if (isScalar(only.key) && only.key.value !== null && empty) return String(only.key.value);
  }
  if (isSeq(key) && key.items.length === 1) {
    const only = key.items[0];
    if (isScalar(only) && only.value !== null) return String(only.value);
  }
  return undefined;
}

const MAX_KEY_CHARS = 40;

/** The source text of a node on one line, shortened. */
function sourceOf(text: string, node: Node | null): string {
  const range = node?.range;
  const source = range ? text.slice(range[0], range[1]) : '';
  const line = source.replace(/\s+/g, ' ').trim();
  return line.length > MAX_KEY_CHARS ? `${line.slice(0, MAX_KEY_CHARS - 1)}…` : line;
}

/** Where the tag written before the node at `start` begins (the node's range excludes it). */
function tagOffset(text: string, start: number): number {
  let bang = text.lastIndexOf('!', start);
  if (bang < 0) return start;
  // The last "!" may be inside the tag (`!!str`, `!e!name`): the tag starts where its word does.
  let word = bang;
  while (word > 0 && !/\s/.test(text[word - 1]!)) word -= 1;
  if (text[word] === '!') bang = word;
  return /^!\S*\s+(?:&\S+\s+)?$/.test(text.slice(bang, start)) ? bang : start;
}
