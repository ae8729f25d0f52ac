/**
 * Cross-field rules of pipeline files, one small named function each. Spec rules look at the
 * file as written (paths into the document); request rules look at one merged, expanded
 * request (paths into the request, mapped back to the file by the caller).
 */
import { CronExpressionParser } from 'cron-parser';
import {
  DOMAIN_CONFLICT_MESSAGE,
  type Format,
  formatType,
  WAIT_FOR_TIMEOUT_MESSAGE,
} from '../contract/index.ts';
import { matrixSize } from './expand.ts';
import { describeValue, type Finding, listAllowed, suggestionSuffix } from './issues.ts';
import { parseTemplate } from './placeholders.ts';
import { isRequestField, type Pipeline, REQUEST_FIELDS, type SearchItem } from './schema.ts';

/** Most searches one pipeline may expand to. */
export const MAX_EXPANDED_SEARCHES = 10_000_000;

/** An item that passed the item schema, with its index in `searches`. */
export interface IndexedItem {
  index: number;
  item: SearchItem;
}

const error = (
  path: Finding['path'],
  message: string,
  code: string,
  extra: Partial<Finding> = {},
): Finding => ({
  code,
  severity: 'error',
  path,
  message,
  ...extra,
});

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
        error(
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
    error(
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
      error(['searches', index, 'query'], message, 'PLACEHOLDER_WITHOUT_VALUE', {
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
        error(
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
        error(
          ['searches', index, 'matrix', key],
          `matrix key "${key}" is written with braces; write "${bare}:" (braces go in query only)`,
          'MATRIX_KEY_UNUSED',
          { atKey: true, received: describeValue(key), allowed: describeValue(bare) },
        ),
      );
      continue;
    }
    findings.push(
      error(
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
      error(
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
        error(
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
      error(
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
      error(path, `invalid cron expression: ${(cause as Error).message}`, 'CRON_INVALID', {
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
      error(
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

type Json = Record<string, unknown>;

function nonEmptyList(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0;
}

/** includeDomains and excludeDomains are not both set (request path). */
export function domainsExclusive(request: Json): Finding[] {
  if (!nonEmptyList(request.includeDomains) || !nonEmptyList(request.excludeDomains)) return [];
  return [
    error(['excludeDomains'], DOMAIN_CONFLICT_MESSAGE, 'DOMAINS_CONFLICT', {
      allowed: 'includeDomains or excludeDomains, not both',
    }),
  ];
}

/** scrapeOptions.waitFor is at most half of an explicit scrapeOptions.timeout (request path). */
export function waitForWithinTimeout(request: Json): Finding[] {
  const options = request.scrapeOptions as Json | undefined;
  if (typeof options !== 'object' || options === null) return [];
  const { waitFor, timeout } = options;
  if (typeof waitFor !== 'number' || typeof timeout !== 'number' || waitFor * 2 <= timeout)
    return [];
  return [
    error(['scrapeOptions', 'waitFor'], WAIT_FOR_TIMEOUT_MESSAGE, 'WAIT_FOR_TIMEOUT', {
      received: `${waitFor} ms with timeout ${timeout} ms`,
      allowed: `at most ${Math.floor(timeout / 2)} ms`,
    }),
  ];
}

/**
 * The query says something. The API takes "" (the reference sets no minimum) and bills a
 * search of nothing; in a pipeline it is a mistake: an empty literal, or a placeholder filled
 * with nothing.
 */
export function queryNotBlank(request: Json): Finding[] {
  const { query } = request;
  if (typeof query !== 'string' || query.trim() !== '') return [];
  return [error(['query'], 'query is blank: a search needs words to look for', 'QUERY_BLANK')];
}

/** Request rules, run on every expanded request. */
export const REQUEST_RULES: ReadonlyArray<(request: Json) => Finding[]> = [
  queryNotBlank,
  domainsExclusive,
  waitForWithinTimeout,
];
/** Contract messages the request rules report themselves (with better positions). */
export const MESSAGES_COVERED_BY_RULES: ReadonlySet<string> = new Set([
  DOMAIN_CONFLICT_MESSAGE,
  WAIT_FOR_TIMEOUT_MESSAGE,
]);

/** The switches of the `media` section: which signed URLs harvest saves. */
export const MEDIA_OPTIONS = ['screenshot', 'audio', 'video', 'actions'] as const;
export type MediaOption = (typeof MEDIA_OPTIONS)[number];

/** Action types whose outputs are signed URLs (`actions.screenshots`, `actions.pdfs`). */
const MEDIA_ACTIONS: ReadonlySet<string> = new Set(['screenshot', 'pdf']);

/**
 * Where a request asks for media, by option: format indexes of screenshot, audio and video,
 * and the index of each screenshot or pdf action. `at` is the path within the request.
 */
export function mediaFormats(
  request: Json,
): Array<{ kind: MediaOption; at: Array<string | number> }> {
  const scrape = request.scrapeOptions as Json | undefined;
  const found: Array<{ kind: MediaOption; at: Array<string | number> }> = [];
  const formats = scrape?.formats;
  if (Array.isArray(formats)) {
    formats.forEach((format, formatIndex) => {
      const type = formatType(format as Format);
      if (type === 'screenshot' || type === 'audio' || type === 'video')
        found.push({ kind: type, at: ['scrapeOptions', 'formats', formatIndex] });
    });
  }
  const actions = scrape?.actions;
  if (Array.isArray(actions)) {
    actions.forEach((action, actionIndex) => {
      const type = (action as Json | null)?.type;
      if (typeof type === 'string' && MEDIA_ACTIONS.has(type))
        found.push({ kind: 'actions', at: ['scrapeOptions', 'actions', actionIndex] });
    });
  }
  return found;
}

const EXPIRY_TEXT: Record<MediaOption, string> = {
  screenshot: 'screenshot URLs expire after 24 hours',
  audio: 'audio URLs expire after 1 hour',
  video: 'video URLs expire after 1 hour',
  actions: 'the screenshots and PDFs of actions are signed URLs that expire',
};

/** `media.dir` is a folder inside the data directory: relative, without `..`. */
export function mediaDirInside(media: Pipeline['media']): Finding[] {
  const dir = media?.dir;
  if (dir === undefined) return [];
  const segments = dir.split(/[\\/]+/);
  if (
    /^([\\/]|[A-Za-z]:)/.test(dir) ||
    segments.includes('..') ||
    segments.every((s) => s === '.' || s === '')
  ) {
    return [
      {
        code: 'MEDIA_DIR_OUTSIDE',
        severity: 'error',
        path: ['media', 'dir'],
        message: 'media.dir must be a folder inside the data directory: relative, without ".."',
      },
    ];
  }
  // A folder name with a control character (NUL, a newline) is refused by the file system
  // only when the first download tries to make it: every file of the run would fail.
  if (/\p{Cc}/u.test(dir)) {
    return [
      {
        code: 'MEDIA_DIR_INVALID',
        severity: 'error',
        path: ['media', 'dir'],
        message: 'media.dir must not contain control characters',
      },
    ];
  }
  return [];
}

/**
 * Media requested in formats but not saved (its URLs expire), and media saved but never
 * requested. `requestedAt` holds the file path of the first format requesting each kind.
 */
export function mediaMatchesFormats(
  media: Pipeline['media'],
  requestedAt: ReadonlyMap<MediaOption, Finding['path']>,
): Finding[] {
  const findings: Finding[] = [];
  for (const kind of MEDIA_OPTIONS) {
    const saved = media?.[kind] === true;
    const where = requestedAt.get(kind);
    if (where !== undefined && !saved) {
      findings.push({
        code: 'MEDIA_NOT_SAVED',
        severity: 'warning',
        path: where,
        message: `${EXPIRY_TEXT[kind]} and will not be saved; set media.${kind}: true to keep them`,
      });
    }
    if (where === undefined && saved) {
      findings.push({
        code: 'MEDIA_NOT_REQUESTED',
        severity: 'warning',
        path: ['media', kind],
        message:
          kind === 'actions'
            ? 'no search runs a screenshot or pdf action, so there are no action outputs to save'
            : `no search requests the ${kind} format, so there is no ${kind} to save`,
      });
    }
  }
  return findings;
}
