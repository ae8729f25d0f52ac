/**
 * Canonical JSON: object keys sorted (code-point order) at every level, `undefined` fields
 * dropped, so equal values give equal text whatever order their keys were written in. Task keys
 * (src/pipeline) and the sandbox's results cache and seeds (src/sandbox) are built on it.
 */

/** Frozen objects cannot change, so their text is remembered (plans share frozen parts). */
const frozenText = new WeakMap<object, string>();

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
  const keys = Object.keys(record);
  if (keys.length > 1) keys.sort();
  let out = '{';
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    if (out.length > 1) out += ',';
    out += `${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `${out}}`;
}
