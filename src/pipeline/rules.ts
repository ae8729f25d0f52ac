/**
 * Cross-field rules of pipeline files, one small named function each. Spec rules look at the
 * file as written (paths into the document); request rules look at one merged, expanded
 * request (paths into the request, mapped back to the file by the caller): those are in
 * request-rules.ts, and the rules of the `media` section in media-rules.ts.
 */
import { CronExpressionParser } from 'cron-parser';
import { matrixSize } from './expand.ts';
import {
  describeValue,
  errorFinding,
  type Finding,
  listAllowed,
  suggestionSuffix,
} from './issues.ts';
import { parseTemplate } from './placeholders.ts';
import { isRequestField, type Pipeline, REQUEST_FIELDS, type SearchItem } from './schema.ts';

/** Most searches one pipeline may expand to. */
export const MAX_EXPANDED_SEARCHES = 10_000_000;

/** An item that passed the item schema, with its index in `searches`. */
export interface IndexedItem {
  index: number;
  item: SearchItem;
}

/** Search ids are unique in a file. */
export function duplicateSearchIds(items: readonly IndexedItem[]): Finding[] {
  const first = new Map<string, number>();
  const findings: Finding[] = [];
  for (const { index, item } of items) {
    if (item.id === undefined) continue;
    const earlier = first.get(item.id);
    if (earlier === undefined) first.set(item.id, index);
    else {
      findings.push(
        errorFinding(
          ['searches', index, 'id'],
          `duplicate search id (first used by searches[${earlier}])`,
          'DUPLICATE_SEARCH_ID',
          {
            received: describeValue(item.id),
            allowed: 'an id no other search uses',
          },
        ),
      );
    }
  }
  return findings;
}

/** Every search has a query: its own, or one per matrix value. */
export function queryPresent({ index, item }: IndexedItem): Finding[] {
  if (item.query !== undefined || item.matrix?.query !== undefined) return [];
  return [
    errorFinding(
      ['searches', index],
      'query is required (in the search or in its matrix)',
      'QUERY_MISSING',
    ),
  ];
}

/** Every `{placeholder}` in query names a matrix key. */
export function placeholdersHaveValues({ index, item }: IndexedItem): Finding[] {
  if (item.query === undefined) return [];
  const keys = Object.keys(item.matrix ?? {});
  // Only keys that can be placeholders are offered (not `{topic}`, which would read `{{topic}}`).
  const names = keys.filter((key) => PLACEHOLDER_NAME.test(key));
  const findings: Finding[] = [];
  const seen = new Set<string>();
  for (const { name } of parseTemplate(item.query).refs) {
    if (keys.includes(name) || seen.has(name)) continue;
    seen.add(name);
    const braced = keys.find((key) => nameInBraces(key) === name);
    const message =
      braced === undefined
        ? `placeholder {${name}} has no matrix value${suggestionSuffix(name, names)}`
        : `placeholder {${name}} has no matrix value: the matrix key is written "${braced}"; write "${name}:", without braces`;
    findings.push(
      errorFinding(['searches', index, 'query'], message, 'PLACEHOLDER_WITHOUT_VALUE', {
        received: `{${name}}`,
        allowed:
          braced !== undefined
            ? `a matrix key ${name}`
            : keys.length === 0
              ? `a "matrix:" with a list for ${name} (write {{ and }} for literal braces)`
              : names.length === 0
                ? `a matrix key ${name}`
                : `placeholders ${listAllowed(names.map((key) => `{${key}}`))}`,
      }),
    );
  }
  return findings;
}

/** What a `{placeholder}` may be named (as `parseTemplate` reads it). */
const PLACEHOLDER_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `topic` for a matrix key written as a placeholder (`{topic}`, `{ topic }`), else undefined. */
function nameInBraces(key: string): string | undefined {
  return /^\{+\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}+$/.exec(key)?.[1];
}

/** Values used as placeholders are plain scalars (not lists or objects). */
export function placeholderValuesAreScalars({ index, item }: IndexedItem): Finding[] {
  if (item.query === undefined || item.matrix === undefined) return [];
  const matrix = item.matrix as Record<string, readonly unknown[] | undefined>;
  const names = new Set(parseTemplate(item.query).names);
  const findings: Finding[] = [];
  for (const name of names) {
    // Own keys only: a placeholder named like an Object member ({constructor}) has no value.
    (Object.hasOwn(matrix, name) ? matrix[name] : undefined)?.forEach((value, valueIndex) => {
      if (typeof value !== 'object' || value === null) return;
      findings.push(
        errorFinding(
          ['searches', index, 'matrix', name, valueIndex],
          `{${name}} is used in query, so its values must be text, numbers or booleans`,
          'PLACEHOLDER_VALUE_NOT_SCALAR',
          {
            received: describeValue(value),
          },
        ),
      );
    });
  }
  return findings;
}

/** A matrix key is a request field or a placeholder used in query (else it is likely a typo). */
export function matrixKeysUsed({ index, item }: IndexedItem): Finding[] {
  if (item.matrix === undefined) return [];
  const used = new Set(item.query === undefined ? [] : parseTemplate(item.query).names);
  const findings: Finding[] = [];
  for (const key of Object.keys(item.matrix)) {
    if (isRequestField(key) || used.has(key)) continue;
    const bare = nameInBraces(key);
    if (bare !== undefined) {
      findings.push(
        errorFinding(
          ['searches', index, 'matrix', key],
          `matrix key "${key}" is written with braces; write "${bare}:" (braces go in query only)`,
          'MATRIX_KEY_UNUSED',
          { atKey: true, received: describeValue(key), allowed: describeValue(bare) },
        ),
      );
      continue;
    }
    findings.push(
      errorFinding(
        ['searches', index, 'matrix', key],
        `matrix key "${key}" is neither a search-request field nor used as {${key}} in query${suggestionSuffix(key, [...REQUEST_FIELDS, ...used])}`,
        'MATRIX_KEY_UNUSED',
        {
          atKey: true,
          received: describeValue(key),
          allowed: 'a search-request field or a placeholder used in query',
        },
      ),
    );
  }
  return findings;
}

/** A field is set either by the item or by its matrix, not both. */
export function matrixFieldNotAlsoSet({ index, item }: IndexedItem): Finding[] {
  if (item.matrix === undefined) return [];
  const fields = item as Record<string, unknown>;
  return Object.keys(item.matrix)
    .filter((key) => isRequestField(key) && fields[key] !== undefined)
    .map((key) =>
      errorFinding(
        ['searches', index, 'matrix', key],
        `${key} is set both by the search and by its matrix; keep one`,
        'MATRIX_FIELD_CONFLICT',
        { atKey: true },
      ),
    );
}

/** The whole file expands to at most MAX_EXPANDED_SEARCHES searches. */
export function expansionWithinLimit(
  items: readonly IndexedItem[],
  max = MAX_EXPANDED_SEARCHES,
): Finding[] {
  let total = 0;
  for (const { index, item } of items) {
    const size = matrixSize(
      item.matrix as Record<string, readonly unknown[] | undefined> | undefined,
    );
    total += size;
    if (total > max) {
      return [
        errorFinding(
          item.matrix === undefined ? ['searches', index] : ['searches', index, 'matrix'],
          'the pipeline expands to too many searches',
          'TOO_MANY_SEARCHES',
          {
            received: `${total >= 1e15 ? 'more than 10^15' : total} searches by here`,
            allowed: `at most ${max}`,
          },
        ),
      ];
    }
  }
  return [];
}

/** `schedule.cron` has 5 or 6 fields and parses (cron-parser). */
export function scheduleCron(schedule: Pipeline['schedule']): Finding[] {
  if (schedule === undefined) return [];
  const path = ['schedule', 'cron'];
  const fields = schedule.cron.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    return [
      errorFinding(
        path,
        'cron expression must have 5 fields (minute hour day month weekday) or 6 (seconds first)',
        'CRON_INVALID',
        {
          received: `${fields.length} field${fields.length === 1 ? '' : 's'} (${describeValue(schedule.cron)})`,
          allowed: '5 or 6 fields, e.g. "0 6 * * 1"',
        },
      ),
    ];
  }
  try {
    CronExpressionParser.parse(schedule.cron, { tz: 'UTC' });
    return [];
  } catch (cause) {
    return [
      errorFinding(path, `invalid cron expression: ${(cause as Error).message}`, 'CRON_INVALID', {
        received: describeValue(schedule.cron),
      }),
    ];
  }
}

/** `schedule.tz` is an IANA time zone this runtime knows. */
export function scheduleTimeZone(schedule: Pipeline['schedule']): Finding[] {
  if (schedule?.tz === undefined) return [];
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: schedule.tz });
    return [];
  } catch {
    const zones = Intl.supportedValuesOf('timeZone');
    return [
      errorFinding(
        ['schedule', 'tz'],
        `unknown time zone${suggestionSuffix(schedule.tz, zones)}`,
        'TZ_INVALID',
        {
          received: describeValue(schedule.tz),
          allowed: 'an IANA time zone such as "UTC" or "Europe/Berlin"',
        },
      ),
    ];
  }
}
