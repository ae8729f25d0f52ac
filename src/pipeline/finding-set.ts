/**
 * The findings of one pipeline file, deduplicated and counted, then turned into issues with
 * their positions (at most MAX_ISSUES_PER_FILE of them).
 */
import { type Finding, type Issue, pathToString, sortIssues } from './issues.ts';
import type { Locator } from './positions.ts';

/**
 * Most issues reported for one file, a screenful; a last issue counts the rest. Errors are kept
 * before warnings, so a file's errors are not hidden behind its warnings.
 */
export const MAX_ISSUES_PER_FILE = 20;

/** `issues` (sorted) cut to MAX_ISSUES_PER_FILE, and a last issue saying how many more. */
export function capIssues(issues: Issue[], file: string): Issue[] {
  if (issues.length <= MAX_ISSUES_PER_FILE) return issues;
  const errorsFirst = [
    ...issues.filter((issue) => issue.severity === 'error'),
    ...issues.filter((issue) => issue.severity !== 'error'),
  ];
  const shown = sortIssues(errorsFirst.slice(0, MAX_ISSUES_PER_FILE));
  const hidden = errorsFirst.slice(MAX_ISSUES_PER_FILE);
  shown.push({
    code: 'TOO_MANY_ISSUES',
    severity: hidden.some((issue) => issue.severity === 'error') ? 'error' : 'warning',
    file,
    line: 1,
    col: 1,
    path: '',
    message: `… and ${hidden.length} more issue${hidden.length === 1 ? '' : 's'}`,
  });
  return shown;
}

/**
 * Findings deduplicated by path, code and message; repeats from a matrix are counted. The
 * findings of one check (one search, or the file's schema) are one group: the same finding
 * twice in a group is one problem, not a repeat (zod reports two bounds of a number too large
 * for both the API and the safe integers), and the tighter bound is the one said.
 */
export class FindingSet {
  private readonly entries = new Map<
    string,
    { finding: Finding; context: string; repeats: number }
  >();

  add(finding: Finding, context = ''): void {
    this.addGroup([{ finding, context }]);
  }

  addAll(findings: readonly Finding[]): void {
    this.addGroup(findings.map((finding) => ({ finding, context: '' })));
  }

  /** Findings of one check: repeats within the group merge; across groups they are counted. */
  addGroup(group: readonly { finding: Finding; context: string }[]): void {
    const merged = new Map<string, { finding: Finding; context: string }>();
    for (const { finding, context } of group) {
      const id = findingId(finding);
      const earlier = merged.get(id);
      if (earlier === undefined) merged.set(id, { finding, context });
      else earlier.finding = tighterBound(earlier.finding, finding);
    }
    for (const [id, { finding, context }] of merged) {
      const entry = this.entries.get(id);
      if (entry) entry.repeats += 1;
      else this.entries.set(id, { finding, context, repeats: 0 });
    }
  }

  toIssues(file: string, locator: Locator): Issue[] {
    const issues: Issue[] = [];
    for (const { finding, context, repeats } of this.entries.values()) {
      const more =
        repeats > 0 ? ` (and ${repeats} more combination${repeats === 1 ? '' : 's'})` : '';
      const position = locator.locate(finding.path, { atKey: finding.atKey === true });
      issues.push(
        toIssue({ ...finding, message: finding.message + context + more }, file, position),
      );
    }
    return capIssues(sortIssues(issues), file);
  }
}

function findingId(finding: Finding): string {
  return `${pathToString(finding.path)}\u0000${finding.atKey === true}\u0000${finding.code}\u0000${finding.message}`;
}

const BOUND = /^(at most|less than|at least|more than) (-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)/i;

/**
 * Of two findings on one value that differ in the bound they allow ("at most 100" and "at most
 * 9007199254740991"), the one whose bound is tighter: that is the bound the value must meet.
 */
function tighterBound(a: Finding, b: Finding): Finding {
  const boundA = BOUND.exec(a.allowed ?? '');
  const boundB = BOUND.exec(b.allowed ?? '');
  if (boundA === null || boundB === null) return a;
  const upper = (word: string) => word === 'at most' || word === 'less than';
  if (upper(boundA[1]!) !== upper(boundB[1]!)) return a;
  const valueA = Number(boundA[2]);
  const valueB = Number(boundB[2]);
  return upper(boundA[1]!) ? (valueB < valueA ? b : a) : valueB > valueA ? b : a;
}

export function toIssue(
  finding: Finding,
  file: string,
  position: { line: number; col: number },
): Issue {
  const issue: Issue = {
    code: finding.code,
    severity: finding.severity,
    file,
    line: position.line,
    col: position.col,
    path: pathToString(finding.path),
    message: finding.message,
  };
  if (finding.received !== undefined) issue.received = finding.received;
  if (finding.allowed !== undefined) issue.allowed = finding.allowed;
  return issue;
}
