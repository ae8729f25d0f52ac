/**
 * Walking plain data and the zod schema it was checked with along one path: the value at a
 * path, and the keys the object schema there allows (for unknown-key messages).
 */
import type { z } from 'zod';
import type { Path } from './issues.ts';

type AnySchema = z.core.$ZodType;

/** The value at `path` in plain data. */
export function valueAt(data: unknown, path: Path): unknown {
  let current = data;
  for (const segment of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

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
