/**
 * Reading a pipeline file and parsing its YAML with source positions. Refuses what can hurt:
 * files over the size limit, bytes that are not UTF-8, aliases (no alias bombs), explicit
 * tags (no custom types), several documents in one file, duplicate keys. What is refused node
 * by node (aliases, tags, keys that are not text) is found in yaml-refusals.ts.
 */
import { readFile, stat } from 'node:fs/promises';
import { type Document, LineCounter, parseDocument } from 'yaml';
import type { Issue } from './issues.ts';
import { createLocator, type Locator, START } from './positions.ts';
import { type PositionedFinding, positioned, refusedNodes } from './yaml-refusals.ts';

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
  const findings = [...parserProblems(doc, locator), ...refusedNodes(doc, text, locator)];
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

/** The yaml parser's errors and warnings, in words for a person writing a pipeline. */
function parserProblems(doc: Document, locator: Locator): PositionedFinding[] {
  const problems = [...doc.errors, ...doc.warnings].filter(
    // Explicit tags are reported once, by refusedNodes.
    (problem) => problem.code !== 'TAG_RESOLVE_FAILED',
  );
  return problems.map((problem) => {
    const plain = PLAIN_PROBLEMS[problem.code];
    return positioned(
      plain?.code ?? 'YAML_SYNTAX',
      plain?.message ?? firstLine(problem.message),
      locator.at(problem.pos[0]),
    );
  });
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

function firstLine(message: string): string {
  const line = message.split('\n')[0] ?? message;
  // The yaml package appends " at line N, column M:" to some messages; the position is ours.
  return line.replace(/ at line \d+, column \d+:?$/, '');
}
