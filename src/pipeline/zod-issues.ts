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
  const at = (extra: Omit<Finding, 'severity' | 'path'> & { path?: Path }) =>
    out.push({ severity: 'error', ...extra, path: [...prefix, ...(extra.path ?? path)] });
  switch (issue.code) {
    case 'invalid_type': {
      if (value === undefined && !hasKey(data, path)) {
        at({
          code: 'MISSING',
          message: 'required field is missing',
          allowed: article(issue.expected),
        });
        return;
      }
      at({
        code: 'INVALID_TYPE',
        message: `expected ${article(issue.expected)}`,
        received: `${describeValue(value)} (${typeName(value)})`,
      });
      return;
    }
    case 'unrecognized_keys': {
      const allowed = allowedKeysAt(schema, data, path);
      for (const key of issue.keys) {
        at({
          code: 'UNKNOWN_KEY',
          path: [...path, key],
          atKey: true,
          message: `unknown key "${key}"${allowed ? suggestionSuffix(key, allowed) : ''}`,
          received: describeValue(key),
          ...(allowed ? { allowed: listAllowed(allowed, 30) } : {}),
        });
      }
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
        at({
          code: 'TOO_SMALL',
          message: 'must not be empty',
          received,
          allowed: 'at least 1 item',
        });
        return;
      }
      at({
        code: big ? 'TOO_BIG' : 'TOO_SMALL',
        message: big ? tooBigWord(issue.origin) : tooSmallWord(issue.origin),
        received,
        allowed: `${comparison} ${String(bound)}${noun}`,
      });
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

/** The value at `path` in plain data. */
export function valueAt(data: unknown, path: Path): unknown {
  let current = data;
  for (const segment of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

function hasKey(data: unknown, path: Path): boolean {
  if (path.length === 0) return true;
  const parent = valueAt(data, path.slice(0, -1));
  return parent !== null && typeof parent === 'object' && path[path.length - 1]! in parent;
}

// Schema walking, to list the keys an object allows (for unknown-key messages).

interface Def {
  type: string;
  shape?: Record<string, AnySchema>;
  innerType?: AnySchema;
  in?: AnySchema;
  element?: AnySchema;
  valueType?: AnySchema;
  options?: AnySchema[];
  catchall?: AnySchema;
  getter?: () => AnySchema;
}

function defOf(schema: AnySchema): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

function unwrap(schema: AnySchema): AnySchema {
  let current = schema;
  for (let depth = 0; depth < 32; depth++) {
    const def = defOf(current);
    if (def.innerType !== undefined) current = def.innerType;
    else if (def.type === 'pipe' && def.in !== undefined) current = def.in;
    else if (def.type === 'lazy' && def.getter !== undefined) current = def.getter();
    else return current;
  }
  return current;
}

/** Pick the union option that fits `value` (an object option whose keys or `type` match). */
function chooseOption(options: readonly AnySchema[], value: unknown): AnySchema | undefined {
  const objects = options.map(unwrap).filter((option) => defOf(option).type === 'object');
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const type = (value as Record<string, unknown>).type;
    for (const option of objects) {
      const typeSchema = defOf(option).shape?.type;
      if (typeSchema === undefined) continue;
      const literal = defOf(unwrap(typeSchema)) as unknown as { values?: unknown[] };
      if (literal.values?.includes(type)) return option;
    }
  }
  return objects[0] ?? options[0];
}

/** The keys the object schema at `path` allows, or undefined when it cannot be told. */
export function allowedKeysAt(schema: AnySchema, data: unknown, path: Path): string[] | undefined {
  let current: AnySchema | undefined = schema;
  for (let i = 0; i <= path.length && current !== undefined; i++) {
    current = unwrap(current);
    let def = defOf(current);
    if (def.type === 'union' && def.options !== undefined) {
      current = chooseOption(def.options, valueAt(data, path.slice(0, i)));
      if (current === undefined) return undefined;
      current = unwrap(current);
      def = defOf(current);
    }
    if (i === path.length) {
      return def.type === 'object' && def.shape !== undefined ? Object.keys(def.shape) : undefined;
    }
    const segment = path[i]!;
    if (def.type === 'object') current = def.shape?.[String(segment)] ?? def.catchall;
    else if (def.type === 'array') current = def.element;
    else if (def.type === 'record') current = def.valueType;
    else return undefined;
  }
  return undefined;
}
