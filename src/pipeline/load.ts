/**
 * Reading a pipeline file and parsing its YAML with source positions. Refuses what can hurt:
 * files over the size limit, bytes that are not UTF-8, aliases (no alias bombs), explicit
 * tags (no custom types), several documents in one file, duplicate keys.
 */
import { readFile, stat } from 'node:fs/promises';
import {
  type Document,
  isAlias,
  isCollection,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  type Pair,
  parseDocument,
  visit,
} from 'yaml';
import type { Finding, Issue, PathSegment } from './issues.ts';
import { createLocator, type Locator, START } from './positions.ts';

/** Largest pipeline file accepted, in bytes (1 MiB). */
export const MAX_PIPELINE_BYTES = 1024 * 1024;

export type ReadResult = { ok: true; text: string } | { ok: false; issues: Issue[] };

function fileIssue(file: string, code: string, message: string, extra: Partial<Issue> = {}): Issue {
  return { code, severity: 'error', file, ...START, path: '', message, ...extra };
}

/** Read a file as UTF-8 text, refusing files over `maxBytes`. Never throws. */
export async function readPipelineText(
  path: string,
  maxBytes: number = MAX_PIPELINE_BYTES,
): Promise<ReadResult> {
  let bytes: Buffer;
  try {
    const info = await stat(path);
    if (!info.isFile()) {
      return { ok: false, issues: [fileIssue(path, 'FILE_UNREADABLE', 'not a regular file')] };
    }
    if (info.size > maxBytes) return { ok: false, issues: [tooLarge(path, info.size, maxBytes)] };
    bytes = await readFile(path);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return {
      ok: false,
      issues: [fileIssue(path, 'FILE_UNREADABLE', `cannot read file (${reason})`)],
    };
  }
  return decodePipelineBytes(bytes, path, maxBytes);
}

/** Decode bytes as UTF-8 (a leading BOM is dropped), refusing invalid UTF-8 and large input. */
export function decodePipelineBytes(
  bytes: Uint8Array,
  file: string,
  maxBytes: number = MAX_PIPELINE_BYTES,
): ReadResult {
  if (bytes.byteLength > maxBytes) {
    return { ok: false, issues: [tooLarge(file, bytes.byteLength, maxBytes)] };
  }
  try {
    return { ok: true, text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    return {
      ok: false,
      issues: [fileIssue(file, 'FILE_NOT_UTF8', 'file is not valid UTF-8 text')],
    };
  }
}

function tooLarge(file: string, sizeBytes: number, maxBytes: number): Issue {
  return fileIssue(file, 'FILE_TOO_LARGE', 'file is too large', {
    received: `${sizeBytes} bytes`,
    allowed: `at most ${maxBytes} bytes`,
  });
}

export type YamlResult =
  | { ok: true; data: unknown; locator: Locator }
  | { ok: false; findings: PositionedFinding[]; locator: Locator };

/** A finding whose position is already known (YAML syntax problems have no document path). */
export interface PositionedFinding extends Finding {
  line: number;
  col: number;
}

/** Parse YAML text into plain data plus a locator for positions. Never throws. */
export function parseYaml(text: string): YamlResult {
  const lineCounter = new LineCounter();
  const empty = createLocator(undefined, lineCounter);
  if (text.length > MAX_PIPELINE_BYTES) {
    const finding = positioned('FILE_TOO_LARGE', 'file is too large', START, {
      received: `${text.length} characters`,
      allowed: `at most ${MAX_PIPELINE_BYTES} bytes`,
    });
    return { ok: false, findings: [finding], locator: empty };
  }
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(text, {
      lineCounter,
      prettyErrors: false,
      uniqueKeys: true,
      schema: 'core',
      merge: false,
      strict: true,
    });
  } catch (error) {
    const finding = positioned(
      'YAML_SYNTAX',
      `cannot parse YAML: ${(error as Error).message}`,
      START,
    );
    return { ok: false, findings: [finding], locator: empty };
  }
  const locator = createLocator(doc, lineCounter);
  const findings: PositionedFinding[] = [];
  const problems = [...doc.errors, ...doc.warnings].filter(
    // Explicit tags are reported once, below.
    (problem) => problem.code !== 'TAG_RESOLVE_FAILED',
  );
  for (const problem of problems) {
    const plain = PLAIN_PROBLEMS[problem.code];
    findings.push(
      positioned(
        plain?.code ?? 'YAML_SYNTAX',
        plain?.message ?? firstLine(problem.message),
        locator.at(problem.pos[0]),
      ),
    );
  }
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
  if (findings.length > 0) return { ok: false, findings, locator };
  if (doc.contents === null) {
    return {
      ok: false,
      findings: [positioned('YAML_EMPTY', 'file holds no pipeline (it is empty)', START)],
      locator,
    };
  }
  try {
    const data: unknown = doc.toJS({ maxAliasCount: 0 });
    if (nestingDepth(data) > MAX_NESTING) {
      const finding = positioned(
        'YAML_TOO_DEEP',
        `the YAML nests more than ${MAX_NESTING} levels deep; a pipeline needs a few (an indentation slip, or a generated file?)`,
        START,
      );
      return { ok: false, findings: [finding], locator };
    }
    return { ok: true, data, locator };
  } catch (error) {
    const finding = positioned(
      'YAML_SYNTAX',
      `cannot read YAML: ${(error as Error).message}`,
      START,
    );
    return { ok: false, findings: [finding], locator };
  }
}

/** Deepest nesting of mappings and lists accepted in a pipeline file. */
export const MAX_NESTING = 64;

/**
 * Problems of the yaml parser said for a person writing a pipeline (its own messages speak to
 * programmers: "please use YAML.parseAllDocuments()").
 */
const PLAIN_PROBLEMS: Partial<Record<string, { code: string; message: string }>> = {
  MULTIPLE_DOCS: {
    code: 'YAML_SEVERAL_DOCUMENTS',
    message:
      'a pipeline file holds one YAML document, and a `---` line here starts another: put each pipeline in its own file',
  },
  RESOURCE_EXHAUSTION: {
    code: 'YAML_TOO_DEEP',
    message: `the YAML nests too deeply to read (a pipeline needs a few levels, at most ${MAX_NESTING}): unclosed [ or { brackets?`,
  },
};

/** How deeply `value` nests arrays and objects (0 for a scalar), without recursion. */
export function nestingDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth + 1 > deepest) deepest = depth + 1;
    if (deepest > MAX_NESTING) return deepest;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

function positioned(
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

function firstLine(message: string): string {
  const line = message.split('\n')[0] ?? message;
  // The yaml package appends " at line N, column M:" to some messages; the position is ours.
  return line.replace(/ at line \d+, column \d+:?$/, '');
}
