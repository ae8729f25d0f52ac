/**
 * Reading a pipeline file and parsing its YAML with source positions. Refuses what can hurt:
 * files over the size limit, bytes that are not UTF-8, text nested too deeply to parse (found
 * before the parse, in yaml-scan.ts), aliases (no alias bombs), explicit tags (no custom
 * types), several documents in one file, duplicate keys. What is refused node by node
 * (aliases, tags, keys that are not text, `__proto__`) is found in yaml-refusals.ts.
 */
import { readFile, stat } from 'node:fs/promises';
import { type Document, LineCounter, parseDocument, type YAMLError } from 'yaml';
import type { Issue } from './issues.ts';
import { createLocator, type Locator, START } from './positions.ts';
import { type PositionedFinding, positioned, refusedNodes } from './yaml-refusals.ts';
import { scanYaml, type Unclosed } from './yaml-scan.ts';

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
  const scan = scanYaml(text, MAX_PARSE_DEPTH);
  if (scan.tooDeepAt !== undefined) {
    const finding = positioned(
      'YAML_TOO_DEEP',
      `the YAML nests too deeply to read here (a pipeline needs a few levels, at most ${MAX_NESTING}): unclosed [ or { brackets, or an indentation slip?`,
      positionOf(text, scan.tooDeepAt),
    );
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
  const findings = [
    ...parserProblems(doc, locator, scan.unclosed),
    ...refusedNodes(doc, text, locator),
  ];
  if (findings.length > 0) return { ok: false, findings, locator };
  if (doc.contents === null) {
    return {
      ok: false,
      findings: [positioned('YAML_EMPTY', 'file holds no pipeline (it is empty)', START)],
      locator,
    };
  }
  return plainData(doc, locator);
}

/**
 * The yaml parser's errors and warnings, in words for a person writing a pipeline. A quote or
 * bracket never closed is reported where it opens: the parser notices it where it gives up.
 */
function parserProblems(
  doc: Document,
  locator: Locator,
  unclosed: readonly Unclosed[],
): PositionedFinding[] {
  const problems = [...doc.errors, ...doc.warnings].filter(
    // Explicit tags are reported once, by refusedNodes.
    (problem) => problem.code !== 'TAG_RESOLVE_FAILED',
  );
  const used = new Set<Unclosed>();
  return problems.map((problem) => {
    const plain = PLAIN_PROBLEMS[problem.code];
    const opened = openingOf(problem, unclosed, used);
    return positioned(
      plain?.code ?? 'YAML_SYNTAX',
      plain?.message ?? firstLine(problem.message),
      locator.at(opened?.offset ?? problem.pos[0]),
    );
  });
}

/**
 * The unclosed quote or flow collection a parser problem is about: the last of its kind that
 * opens before the problem and is not the subject of an earlier problem.
 */
function openingOf(
  problem: YAMLError,
  unclosed: readonly Unclosed[],
  used: Set<Unclosed>,
): Unclosed | undefined {
  const message = problem.message;
  const opener = message.startsWith('Missing closing "')
    ? '"'
    : message.startsWith("Missing closing '")
      ? "'"
      : message.startsWith('Flow sequence')
        ? '['
        : message.startsWith('Flow map')
          ? '{'
          : undefined;
  if (opener === undefined) return undefined;
  let found: Unclosed | undefined;
  for (const entry of unclosed) {
    if (entry.offset >= problem.pos[0]) break;
    if (entry.opener === opener && !used.has(entry)) found = entry;
  }
  if (found !== undefined) used.add(found);
  return found;
}

/** The document as plain data, refused when it nests deeper than MAX_NESTING. */
function plainData(doc: Document, locator: Locator): YamlResult {
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
 * Deepest nesting, as the scan before the parse estimates it, that is parsed at all. A file
 * within MAX_NESTING never comes near it; what passes nests at most about twice this (the
 * estimate may count half the levels), which parses at once.
 */
export const MAX_PARSE_DEPTH = 2 * MAX_NESTING;

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

/** The 1-based line and column of a character offset, for text not parsed. */
function positionOf(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  return { line, col: offset - lineStart + 1 };
}

function firstLine(message: string): string {
  const line = message.split('\n')[0] ?? message;
  // The yaml package appends " at line N, column M:" to some messages; the position is ours.
  return line.replace(/ at line \d+, column \d+:?$/, '');
}
