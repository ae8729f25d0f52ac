/**
 * Validation issues: one shape, one formatter, one "did you mean".
 *
 * Every issue carries a position (1-based line and column) in the file it is about; problems
 * that have no better place (size, encoding) point at 1:1.
 */

/** One step of a path into a pipeline document: a map key or a list index. */
export type PathSegment = string | number;
export type Path = readonly PathSegment[];

export type IssueSeverity = 'error' | 'warning';

/** A problem found in a pipeline file. */
export interface Issue {
  /** Stable machine-readable code, e.g. `UNKNOWN_KEY`, `DUPLICATE_SEARCH`. */
  code: string;
  severity: IssueSeverity;
  file: string;
  /** 1-based line. */
  line: number;
  /** 1-based column. */
  col: number;
  /** Path in the document, e.g. `searches[3].scrapeOptions.formats[1].quality` ('' = the file). */
  path: string;
  message: string;
  /** What the file holds there, rendered for humans. */
  received?: string;
  /** What is allowed there, rendered for humans. */
  allowed?: string;
}

/** A problem before it is given a position: the document path decides where it points. */
export interface Finding {
  code: string;
  severity: IssueSeverity;
  /** Path in the document (not in an expanded request). */
  path: Path;
  /** Point at the key of the last path segment rather than its value. */
  atKey?: boolean;
  message: string;
  received?: string;
  allowed?: string;
}

/** An error at `path`; `extra` adds what was received and allowed, or `atKey`. */
export function errorFinding(
  path: Path,
  message: string,
  code: string,
  extra: Partial<Finding> = {},
): Finding {
  return { code, severity: 'error', path, message, ...extra };
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `['searches', 3, 'scrapeOptions']` -> `searches[3].scrapeOptions`. */
export function pathToString(path: Path): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** `file:line:col path: message (received X; allowed Y)`; warnings say so after the path. */
export function formatIssue(issue: Issue): string {
  const where = `${issue.file}:${issue.line}:${issue.col}`;
  const path = issue.path === '' ? '(file)' : issue.path;
  const kind = issue.severity === 'warning' ? 'warning: ' : '';
  const details: string[] = [];
  if (issue.received !== undefined) details.push(`received ${issue.received}`);
  if (issue.allowed !== undefined) details.push(`allowed ${issue.allowed}`);
  const suffix = details.length > 0 ? ` (${details.join('; ')})` : '';
  return `${where} ${path}: ${kind}${issue.message}${suffix}`;
}

const MAX_RENDERED_CHARS = 60;

/** A short human rendering of a value found in a file. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return truncate(JSON.stringify(value));
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) {
    return String(value);
  }
  if (typeof value === 'bigint') return `${value}`;
  let text: string;
  try {
    text = JSON.stringify(value) ?? typeof value;
  } catch {
    text = typeof value;
  }
  return truncate(text);
}

function truncate(text: string): string {
  return text.length > MAX_RENDERED_CHARS ? `${text.slice(0, MAX_RENDERED_CHARS - 1)}…` : text;
}

/** Render allowed values as `"a", "b" or "c"` (at most `max` of them). */
export function listAllowed(values: readonly unknown[], max = 16): string {
  const rendered = values.slice(0, max).map((value) => describeValue(value));
  if (values.length > max) rendered.push(`… ${values.length - max} more`);
  if (rendered.length <= 1) return rendered.join('');
  return `${rendered.slice(0, -1).join(', ')} or ${rendered[rendered.length - 1]}`;
}

/**
 * Optimal string alignment distance (Damerau-Levenshtein with adjacent transpositions),
 * stopping early once every cell exceeds `max`.
 */
export function editDistance(a: string, b: string, max = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    let rowMin = Number.POSITIVE_INFINITY;
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(
        d[(i - 1) * cols + j]! + 1,
        d[i * cols + j - 1]! + 1,
        d[(i - 1) * cols + j - 1]! + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, d[(i - 2) * cols + j - 2]! + 1);
      }
      d[i * cols + j] = value;
      rowMin = Math.min(rowMin, value);
    }
    if (rowMin > max) return max + 1;
  }
  return d[rows * cols - 1]!;
}

/** Max edit distance for a suggestion. */
export const SUGGESTION_MAX_DISTANCE = 2;

/**
 * The closest candidate within distance 2 (case differences count as distance 0.5 so
 * `IncludeDomains` suggests `includeDomains`), or undefined.
 */
export function didYouMean(input: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    if (candidate === input) continue;
    const distance =
      candidate.toLowerCase() === input.toLowerCase()
        ? 0.5
        : editDistance(input, candidate, SUGGESTION_MAX_DISTANCE);
    if (distance > SUGGESTION_MAX_DISTANCE || distance >= Math.max(input.length, 1)) continue;
    if (
      distance < bestDistance ||
      (distance === bestDistance && best !== undefined && candidate < best)
    ) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** `; did you mean "x"?` or ''. */
export function suggestionSuffix(input: unknown, candidates: Iterable<string>): string {
  if (typeof input !== 'string') return '';
  const suggestion = didYouMean(input, candidates);
  return suggestion === undefined ? '' : `; did you mean "${suggestion}"?`;
}

/** Sort issues by file, line, column, then errors before warnings. */
export function sortIssues(issues: Issue[]): Issue[] {
  return issues.sort(
    (a, b) =>
      (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) ||
      a.line - b.line ||
      a.col - b.col ||
      (a.severity === b.severity ? 0 : a.severity === 'error' ? -1 : 1),
  );
}
