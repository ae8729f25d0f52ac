/**
 * Turns zod issues into findings: a path, what was received, what is allowed, and for unknown
 * keys or values a "did you mean". Unions are explained by the branch that got furthest.
 */
import type { z } from 'zod';
import {
  describeValue,
  type Finding,
  listAllowed,
  type Path,
  type PathSegment,
  suggestionSuffix,
} from './issues.ts';
import { allowedKeysAt, valueAt } from './schema-walk.ts';

type ZodIssue = z.core.$ZodIssue;
type AnySchema = z.core.$ZodType;

/** Findings for the issues of `schema.safeParse(data)`; paths are prefixed with `prefix`. */
export function findingsFromZod(
  issues: readonly ZodIssue[],
  schema: AnySchema,
  data: unknown,
  prefix: Path = [],
): Finding[] {
  const findings: Finding[] = [];
  for (const issue of issues) explain(issue, [], findings, schema, data, prefix);
  return findings;
}

type Explained = Omit<Finding, 'severity' | 'path'> & { path?: Path };

/** One issue's findings, pushed to `out`: one case per zod issue code. */
function explain(
  issue: ZodIssue,
  base: Path,
  out: Finding[],
  schema: AnySchema,
  data: unknown,
  prefix: Path,
): void {
  const path: Path = [...base, ...(issue.path as PathSegment[])];
  const value = valueAt(data, path);
  const at = (extra: Explained) =>
    out.push({ severity: 'error', ...extra, path: [...prefix, ...(extra.path ?? path)] });
  switch (issue.code) {
    case 'invalid_type': {
      at(wrongType(issue, data, path, value));
      return;
    }
    case 'unrecognized_keys': {
      const allowed = allowedKeysAt(schema, data, path);
      for (const key of issue.keys) at(unknownKey(key, path, allowed));
      return;
    }
    case 'invalid_value': {
      at({
        code: 'INVALID_VALUE',
        message: `not an allowed value${suggestionSuffix(value, issue.values.filter(isString))}`,
        received: describeValue(value),
        allowed: listAllowed(issue.values, 30),
      });
      return;
    }
    case 'too_big':
    case 'too_small': {
      at(outOfBounds(issue, value));
      return;
    }
    case 'invalid_format': {
      at({
        code: 'INVALID_FORMAT',
        message: issue.message.startsWith('Invalid') ? `invalid ${issue.format}` : issue.message,
        received: describeValue(value),
      });
      return;
    }
    case 'invalid_union': {
      explainUnion(issue, path, out, schema, data, prefix, value);
      return;
    }
    case 'not_multiple_of': {
      at({
        code: 'INVALID_VALUE',
        message: `must be a multiple of ${String(issue.divisor)}`,
        received: describeValue(value),
      });
      return;
    }
    case 'invalid_key':
    case 'invalid_element': {
      for (const inner of issue.issues) explain(inner, path, out, schema, data, prefix);
      return;
    }
    default: {
      at({ code: 'INVALID_VALUE', message: issue.message, received: describeValue(value) });
    }
  }
}

/** A value of the wrong type, or none where one is required. */
function wrongType(
  issue: z.core.$ZodIssueInvalidType,
  data: unknown,
  path: Path,
  value: unknown,
): Explained {
  if (value === undefined && !hasKey(data, path)) {
    return {
      code: 'MISSING',
      message: 'required field is missing',
      allowed: article(issue.expected),
    };
  }
  return {
    code: 'INVALID_TYPE',
    message: `expected ${article(issue.expected)}`,
    received: `${describeValue(value)} (${typeName(value)})`,
  };
}

/** A key the object at `path` does not allow, at the key, with the ones it does. */
function unknownKey(key: string, path: Path, allowed: string[] | undefined): Explained {
  return {
    code: 'UNKNOWN_KEY',
    path: [...path, key],
    atKey: true,
    message: `unknown key "${key}"${allowed ? suggestionSuffix(key, allowed) : ''}`,
    received: describeValue(key),
    ...(allowed ? { allowed: listAllowed(allowed, 30) } : {}),
  };
}

/** A number, text or list past one of its bounds. */
function outOfBounds(
  issue: z.core.$ZodIssueTooBig | z.core.$ZodIssueTooSmall,
  value: unknown,
): Explained {
  const big = issue.code === 'too_big';
  const bound = big
    ? (issue as { maximum: number | bigint }).maximum
    : (issue as { minimum: number | bigint }).minimum;
  const inclusive = issue.inclusive !== false;
  const comparison = big
    ? inclusive
      ? 'at most'
      : 'less than'
    : inclusive
      ? 'at least'
      : 'more than';
  const { noun, received } = measure(issue.origin, value);
  if (issue.origin === 'array' && !big && Number(bound) === 1) {
    return {
      code: 'TOO_SMALL',
      message: 'must not be empty',
      received,
      allowed: 'at least 1 item',
    };
  }
  return {
    code: big ? 'TOO_BIG' : 'TOO_SMALL',
    message: big ? tooBigWord(issue.origin) : tooSmallWord(issue.origin),
    received,
    allowed: `${comparison} ${String(bound)}${noun}`,
  };
}

function explainUnion(
  issue: z.core.$ZodIssueInvalidUnion,
  path: Path,
  out: Finding[],
  schema: AnySchema,
  data: unknown,
  prefix: Path,
  value: unknown,
): void {
  const note = (issue as { note?: string }).note;
  const options = (issue as { options?: unknown[] }).options;
  if (note !== undefined && Array.isArray(options)) {
    // A discriminated union with no option for this discriminator value.
    out.push({
      code: 'INVALID_VALUE',
      severity: 'error',
      path: [...prefix, ...path],
      message: `unknown type${suggestionSuffix(value, options.filter(isString))}`,
      received: describeValue(value),
      allowed: listAllowed(options, 30),
    });
    return;
  }
  let best: readonly ZodIssue[] | undefined;
  let bestScore = 0;
  for (const branch of issue.errors) {
    const score = branchScore(branch, value);
    if (score > bestScore) {
      best = branch;
      bestScore = score;
    }
  }
  if (best !== undefined) {
    for (const inner of best) explain(inner, path, out, schema, data, prefix);
    return;
  }
  out.push({
    code: 'INVALID_TYPE',
    severity: 'error',
    path: [...prefix, ...path],
    message: 'does not match any allowed form',
    received: `${describeValue(value)} (${typeName(value)})`,
    allowed: issue.errors.map(describeBranch).join(' or '),
  });
}

/** 0 when the branch rejected the value's type outright; higher the deeper it got. */
function branchScore(branch: readonly ZodIssue[], value: unknown): number {
  let score = 1;
  for (const issue of branch) {
    if (issue.path.length === 0) {
      if (issue.code === 'invalid_type') return 0;
      if (issue.code === 'invalid_value' && !issue.values.some((v) => typeof v === typeof value))
        return 0;
    }
    score = Math.max(score, 1 + issue.path.length);
  }
  return score;
}

function describeBranch(branch: readonly ZodIssue[]): string {
  const root = branch.find((issue) => issue.path.length === 0);
  if (root?.code === 'invalid_value') return listAllowed(root.values, 30);
  if (root?.code === 'invalid_type') return article(root.expected);
  return 'another form';
}

function measure(origin: string, value: unknown): { noun: string; received: string } {
  if (origin === 'string') {
    return {
      noun: ' characters',
      received: typeof value === 'string' ? `${value.length} characters` : describeValue(value),
    };
  }
  if (origin === 'array' || origin === 'set') {
    return {
      noun: ' items',
      received: Array.isArray(value) ? `${value.length} items` : describeValue(value),
    };
  }
  return { noun: '', received: describeValue(value) };
}

function tooBigWord(origin: string): string {
  return origin === 'string' ? 'too long' : origin === 'array' ? 'too many items' : 'too large';
}

function tooSmallWord(origin: string): string {
  return origin === 'string' ? 'too short' : origin === 'array' ? 'too few items' : 'too small';
}

function article(expected: string): string {
  switch (expected) {
    case 'int':
      return 'an integer';
    case 'object':
    case 'array':
      return `an ${expected}`;
    case 'string':
      return 'a string (text)';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean (true or false)';
    default:
      return expected;
  }
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a number';
  if (typeof value === 'string') return 'a string';
  return typeof value;
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

function hasKey(data: unknown, path: Path): boolean {
  if (path.length === 0) return true;
  const parent = valueAt(data, path.slice(0, -1));
  return parent !== null && typeof parent === 'object' && path[path.length - 1]! in parent;
}
