/**
 * The pipeline file format as a zod schema, built from the contract's search request fields
 * (one truth). Cross-field rules live in rules.ts; each expanded search is validated again
 * with the contract's SearchRequestSchema.
 */
import { z } from 'zod';
import { SearchRequestObjectSchema } from '../contract/index.ts';
import { DURATION_FORMAT, parseDuration } from './duration.ts';

/** Lowercase letters and digits in words joined by single hyphens, e.g. `weekly-research`. */
export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const SLUG_MAX_CHARS = 64;

/** A matrix key that may be used as `{placeholder}` in `query`. */
export const VARIABLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Search-request fields a pipeline may set: every field of the reference. The pass-through
 * fields the hosted service also accepts (`origin`, `integration`, `filter`, `lang`,
 * `__agentInterop`) are not part of the reference and are not set from pipeline files.
 */
export const REQUEST_FIELDS = [
  'query',
  'limit',
  'sources',
  'categories',
  'includeDomains',
  'excludeDomains',
  'tbs',
  'location',
  'country',
  'safe',
  'timeout',
  'ignoreInvalidURLs',
  'highlights',
  'enterprise',
  'scrapeOptions',
  'threatProtection',
] as const satisfies readonly (keyof typeof SearchRequestObjectSchema.shape)[];
export type RequestField = (typeof REQUEST_FIELDS)[number];
const REQUEST_FIELD_SET: ReadonlySet<string> = new Set(REQUEST_FIELDS);

export function isRequestField(key: string): key is RequestField {
  return REQUEST_FIELD_SET.has(key);
}

/** Keys of a search item that are not request fields. */
export const ITEM_EXTRA_KEYS = ['id', 'tags', 'matrix'] as const;

const shape = SearchRequestObjectSchema.shape;

/** Each request field, optional. */
function optionalFields<K extends RequestField>(keys: readonly K[]) {
  return Object.fromEntries(keys.map((key) => [key, shape[key].optional()])) as {
    [P in K]: z.ZodOptional<(typeof shape)[P]>;
  };
}

const FIELDS_WITHOUT_QUERY = REQUEST_FIELDS.filter((key) => key !== 'query') as Exclude<
  RequestField,
  'query'
>[];

const slug = (what: string) =>
  z
    .string()
    .max(SLUG_MAX_CHARS)
    .regex(SLUG_PATTERN, {
      message: `${what} must be a slug: lowercase letters and digits, words joined by single hyphens`,
    });

/** Search-request fields applied to every search unless it sets them (query excepted). */
export const DefaultsSchema = z
  .strictObject(optionalFields(FIELDS_WITHOUT_QUERY))
  .describe(
    'Search-request fields applied to every search unless it sets them; scrapeOptions merge field by field.',
  );
export type Defaults = z.infer<typeof DefaultsSchema>;

/** A value a placeholder can take: rendered with String(value). */
export const MatrixScalarSchema = z.union([z.string(), z.number(), z.boolean()]);

/**
 * Lists of values; their cartesian product expands the item into searches. A key that is a
 * search-request field sets that field; any other key is a placeholder variable for `query`.
 */
export const MatrixSchema = z
  .strictObject(
    Object.fromEntries(
      REQUEST_FIELDS.map((key) => [key, z.array(shape[key]).min(1).optional()]),
    ) as { [P in RequestField]: z.ZodOptional<z.ZodArray<(typeof shape)[P]>> },
  )
  .catchall(z.array(MatrixScalarSchema).min(1))
  .describe(
    'Lists of values; the cartesian product expands this item. Request-field keys set the field; other keys are {placeholders} for query.',
  );
export type Matrix = z.infer<typeof MatrixSchema>;

/** One entry of `searches`: a search request plus `id`, `tags` and `matrix`. */
export const SearchItemSchema = z.strictObject({
  id: slug('id')
    .optional()
    .describe('Names the search in results and reports; unique in the file.'),
  tags: z
    .array(z.string().min(1).max(SLUG_MAX_CHARS))
    .max(32)
    .optional()
    .describe('Labels carried by every task of this search.'),
  matrix: MatrixSchema.optional(),
  // A template: its placeholders are filled first, and each query it makes is checked against
  // the contract (at most 500 characters) then; longer placeholder names than values do not
  // count against it.
  query: z
    .string()
    .optional()
    .describe('The search query; {name} placeholders are filled from the matrix.'),
  ...optionalFields(FIELDS_WITHOUT_QUERY),
});
export type SearchItem = z.infer<typeof SearchItemSchema>;

export const BudgetSchema = z.strictObject({
  /** Most credits one run may spend; the runner stops starting searches beyond it. */
  maxCredits: z.int().positive().describe('Most credits one run may spend.'),
});

export const ScheduleSchema = z.strictObject({
  /** Cron expression with 5 fields (minute first) or 6 (second first). */
  cron: z.string().min(1).describe('Cron expression: 5 fields, or 6 with seconds first.'),
  /** IANA time zone, e.g. `Europe/Berlin`. Default `UTC`. */
  tz: z.string().min(1).optional().describe('IANA time zone, e.g. Europe/Berlin. Default UTC.'),
  /**
   * Webhook that receives each scheduled run's summary, cost and new results once it has
   * finished: a JSON POST signed with HMAC-SHA256 (`HARVEST_NOTIFY_SECRET`).
   */
  notify: z
    .url({ protocol: /^https?$/, error: 'an http:// or https:// address' })
    .optional()
    .describe(
      "Webhook URL: receives each scheduled run's summary, cost and new results, signed with HMAC-SHA256.",
    ),
});

/** Default of `media.maxBytes`: 100 MiB. */
export const MEDIA_MAX_BYTES_DEFAULT = 100 * 1024 * 1024;

export const MediaSchema = z.strictObject({
  /** Save screenshots (signed URLs live 24 h). Default false. */
  screenshot: z.boolean().optional().describe('Save screenshots (URLs expire after 24 h).'),
  /** Save extracted MP3 audio (signed URLs live 1 h). Default false. */
  audio: z.boolean().optional().describe('Save extracted audio (URLs expire after 1 h).'),
  /** Save extracted video (signed URLs live 1 h). Default false. */
  video: z.boolean().optional().describe('Save extracted video (URLs expire after 1 h).'),
  /** Save the screenshots and PDFs that `actions` produce (signed URLs). Default false. */
  actions: z
    .boolean()
    .optional()
    .describe('Save the screenshots and PDFs of screenshot and pdf actions (signed URLs).'),
  /** Directory for saved media, relative to the data directory. Default `media`. */
  dir: z.string().min(1).optional().describe('Directory for saved media. Default media.'),
  /** Largest file saved, in bytes. Default 104857600 (100 MiB). */
  maxBytes: z.int().positive().optional().describe('Largest media file saved, in bytes.'),
});

/**
 * What to keep of a pipeline's runs, applied after each of its scheduled runs (as `harvest
 * prune` would): older runs' results, calls and media files go, their credits stay summed.
 */
export const RetentionSchema = z
  .strictObject({
    /** Keep the results of this many most recent runs. */
    keepRuns: z
      .int()
      .min(1)
      .max(1_000_000)
      .optional()
      .describe('Keep the results of this many most recent runs.'),
    /** Keep the results of runs started within this long, e.g. `30d` (m, h, d, w). */
    maxAge: z
      .string()
      .refine((text) => parseDuration(text) !== undefined, {
        error: `not a duration; write ${DURATION_FORMAT}`,
      })
      .optional()
      .describe('Keep the results of runs started within this long, e.g. 30d (m, h, d, w).'),
  })
  .refine((r) => (r.keepRuns === undefined) !== (r.maxAge === undefined), {
    error: 'retention sets exactly one of keepRuns or maxAge',
  })
  .describe("What to keep of the pipeline's runs, applied after each scheduled run.");
export type Retention = z.infer<typeof RetentionSchema>;

/** Search requests per minute of the service's plans (api-notes). */
export const PLAN_RATE_LIMITS_PER_MINUTE = {
  free: 10,
  hobby: 100,
  standard: 500,
  growth: 5_000,
  scale: 10_000,
} as const;

export const RunSchema = z.strictObject({
  /** Searches in flight at once for this pipeline. */
  concurrency: z.int().min(1).max(1_000).optional().describe('Searches in flight at once.'),
  /** Attempts per search, the first included. */
  maxAttempts: z.int().min(1).max(100).optional().describe('Attempts per search.'),
  /** Searches per minute, e.g. the plan's limit: free 10, hobby 100, standard 500, growth 5000, scale 10000. */
  rateLimitPerMinute: z
    .int()
    .min(1)
    .max(PLAN_RATE_LIMITS_PER_MINUTE.scale)
    .optional()
    .describe('Searches per minute (plan limits: 10, 100, 500, 5000, 10000).'),
});

export const PipelineSchema = z
  .strictObject({
    name: slug('name').describe('The pipeline name (a slug).'),
    description: z.string().max(10_000).optional(),
    defaults: DefaultsSchema.optional(),
    searches: z.array(SearchItemSchema).min(1).describe('The searches; each may expand a matrix.'),
    budget: BudgetSchema.optional(),
    schedule: ScheduleSchema.optional(),
    media: MediaSchema.optional(),
    run: RunSchema.optional(),
    retention: RetentionSchema.optional(),
  })
  .describe('A harvest pipeline: searches against the Web Data Service API v2.');

/** A validated pipeline file, as written (matrices not expanded, defaults not applied). */
export type Pipeline = z.infer<typeof PipelineSchema>;

/** The JSON Schema of pipeline files (what a file may contain, for editors). */
export function pipelineJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(PipelineSchema, {
    io: 'input',
    unrepresentable: 'any',
    reused: 'ref',
    target: 'draft-2020-12',
  }) as Record<string, unknown>;
  return { ...schema, title: 'harvest pipeline' };
}
