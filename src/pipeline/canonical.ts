/**
 * Canonical JSON and task keys. The key of a task is a hash of its fully normalised request,
 * written with object keys sorted at every level: the same request gives the same key on any
 * machine, whatever order its keys were written in.
 */
import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted (code-point order) at every level; `undefined` fields dropped.
 * Frozen objects cannot change, so their text is remembered (plans share frozen parts).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    return JSON.stringify(value) ?? 'null';
  }
  if (Object.isFrozen(value)) {
    const known = frozenText.get(value);
    if (known !== undefined) return known;
    const text = writeCanonical(value);
    frozenText.set(value, text);
    return text;
  }
  return writeCanonical(value);
}

const frozenText = new WeakMap<object, string>();

function writeCanonical(value: object): string {
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      const item = value[i];
      out += item === undefined ? 'null' : canonicalJson(item);
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    if (!first) out += ',';
    first = false;
    out += `${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `${out}}`;
}

/** Hex characters kept from the sha256 of the canonical request (64 bits). */
export const TASK_KEY_HEX_CHARS = 16;

/** First 16 hex characters of sha256(canonical JSON). */
export function hashCanonical(canonical: string): string {
  // Hex of the first bytes only: a string of its own, not a slice that keeps all 64 alive.
  return createHash('sha256')
    .update(canonical)
    .digest()
    .toString('hex', 0, TASK_KEY_HEX_CHARS / 2);
}

/** The stable key of a request: `hashCanonical(canonicalJson(request))`. */
export function taskKey(request: unknown): string {
  return hashCanonical(canonicalJson(request));
}
