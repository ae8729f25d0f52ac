/** `--fields a,b,c`: the chosen columns of a kind's documented set, in the order given. */
import { UsageError } from '../../errors.ts';
import { suggestionSuffix } from '../../pipeline/issues.ts';
import {
  EXPORT_COLUMNS,
  type ExportColumn,
  type ExportKind,
} from '../../store/queries/export-columns.ts';

/**
 * Every column of `kind` when `fields` is absent; throws UsageError on unknown names, and on an
 * empty list (`--fields ""`: a list that names nothing is a mistake, not "all").
 */
export function resolveFields(kind: ExportKind, fields?: readonly string[]): ExportColumn[] {
  const all = EXPORT_COLUMNS[kind];
  if (fields === undefined) return [...all];
  if (fields.length === 0) {
    throw new UsageError(
      `--fields names no column: list at least one, or leave it out for all (fields: ${all.map((c) => c.name).join(', ')})`,
    );
  }
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
