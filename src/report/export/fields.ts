/** `--fields a,b,c`: the chosen columns of a kind's documented set, in the order given. */
import { UsageError } from '../../errors.ts';
import { suggestionSuffix } from '../../pipeline/issues.ts';
import {
  EXPORT_COLUMNS,
  type ExportColumn,
  type ExportKind,
} from '../../store/queries/export-columns.ts';

/** Every column of `kind` when `fields` is empty or absent; throws UsageError on unknown names. */
export function resolveFields(kind: ExportKind, fields?: readonly string[]): ExportColumn[] {
  const all = EXPORT_COLUMNS[kind];
  if (fields === undefined || fields.length === 0) return [...all];
  const byName = new Map(all.map((c) => [c.name, c]));
  const chosen: ExportColumn[] = [];
  const seen = new Set<string>();
  for (const name of fields) {
    const column = byName.get(name);
    if (!column) {
      throw new UsageError(
        `unknown field "${name}" for --of ${kind}${suggestionSuffix(name, byName.keys())} (fields: ${all.map((c) => c.name).join(', ')})`,
      );
    }
    if (seen.has(name)) throw new UsageError(`field "${name}" is listed twice in --fields`);
    seen.add(name);
    chosen.push(column);
  }
  return chosen;
}
