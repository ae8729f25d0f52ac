/**
 * Active-crawl records (GET /v2/crawl/active and /v1/crawl/active), v1 to v2 normalisation, and
 * the params preview (POST /v2/crawl/params-preview). Response schemas pass unknown keys through.
 */
import { z } from 'zod';
import { LIMITS } from './limits.ts';

/** The echoed scrape options of a crawl: an object, kept as the server sent it. */
const EchoedScrapeOptionsSchema = z.record(z.string(), z.unknown());

export const ActiveCrawlV2Schema = z.looseObject({
  id: z.uuid(),
  teamId: z.string(),
  url: z.string(),
  created_at: z.string().optional(),
  options: z.looseObject({
    /** v2 ScrapeOptions field names (formats, parsers, ...). */
    scrapeOptions: EchoedScrapeOptionsSchema.optional(),
  }),
});
export type ActiveCrawlV2 = z.infer<typeof ActiveCrawlV2Schema>;

export const V1JsonOptionsSchema = z.looseObject({
  schema: z.record(z.string(), z.unknown()).optional(),
  systemPrompt: z.string().optional(),
  prompt: z.string().optional(),
});

export const V1ChangeTrackingOptionsSchema = z.looseObject({
  modes: z.array(z.string()).optional(),
  schema: z.record(z.string(), z.unknown()).optional(),
  prompt: z.string().optional(),
  tag: z.string().nullable().optional(),
});

/** v1 scrape-option names (Versioning section); v2 names may also appear and are kept. */
export const V1ScrapeOptionsSchema = z.looseObject({
  formats: z.array(z.unknown()).optional(),
  parsePDF: z.boolean().optional(),
  jsonOptions: V1JsonOptionsSchema.optional(),
  changeTrackingOptions: V1ChangeTrackingOptionsSchema.optional(),
});
export type V1ScrapeOptions = z.infer<typeof V1ScrapeOptionsSchema>;

export const ActiveCrawlV1Schema = z.looseObject({
  id: z.uuid(),
  teamId: z.string(),
  url: z.string(),
  created_at: z.string().optional(),
  options: z.looseObject({ scrapeOptions: V1ScrapeOptionsSchema.optional() }),
});
export type ActiveCrawlV1 = z.infer<typeof ActiveCrawlV1Schema>;

export const ActiveCrawlsResponseV2Schema = z.looseObject({
  success: z.boolean(),
  crawls: z.array(ActiveCrawlV2Schema),
});
export type ActiveCrawlsResponseV2 = z.infer<typeof ActiveCrawlsResponseV2Schema>;

export const ActiveCrawlsResponseV1Schema = z.looseObject({
  success: z.boolean(),
  crawls: z.array(ActiveCrawlV1Schema),
});
export type ActiveCrawlsResponseV1 = z.infer<typeof ActiveCrawlsResponseV1Schema>;

function jsonFormatFrom(options: V1ScrapeOptions): Record<string, unknown> {
  const json = options.jsonOptions ?? {};
  const format: Record<string, unknown> = { type: 'json' };
  if (json.schema !== undefined) format.schema = json.schema;
  if (json.prompt !== undefined) format.prompt = json.prompt;
  return format;
}

function changeTrackingFormatFrom(options: V1ScrapeOptions): Record<string, unknown> {
  const { modes, schema, prompt, tag } = options.changeTrackingOptions ?? {};
  const format: Record<string, unknown> = { type: 'changeTracking' };
  if (modes !== undefined) format.modes = modes;
  if (schema !== undefined) format.schema = schema;
  if (prompt !== undefined) format.prompt = prompt;
  if (tag !== undefined) format.tag = tag;
  return format;
}

/**
 * Defaults of v1 scrape options that differ from v2's (Versioning: "v1 example defaults differ
 * from v2"). A v1 record that leaves one out meant this value, not the v2 default, so the v2
 * shape states it.
 */
export const V1_SCRAPE_DEFAULTS: Readonly<Record<string, unknown>> = Object.freeze({
  maxAge: 0,
  skipTlsVerification: false,
  timeout: 30_000,
  proxy: 'basic',
});

/** Names only v1 scrape options use, as keys or as format strings. */
const V1_ONLY_KEYS = ['parsePDF', 'jsonOptions', 'changeTrackingOptions'];
const V1_ONLY_FORMATS = new Set(['extract', 'json', 'changeTracking', 'screenshot@fullPage']);
/** Names only v2 scrape options use. */
const V2_ONLY_KEYS = [
  'parsers',
  'onlyCleanContent',
  'minAge',
  'lockdown',
  'redactPII',
  'profile',
  'auditMetadata',
];

/**
 * True when scrape options from a v1 listing are already in v2 names (the hosted service may
 * echo them so): a v2-only field or a format object, and nothing only v1 has. Such options
 * keep v2 defaults; all others are read as v1.
 */
export function echoesV2ScrapeOptions(options: Record<string, unknown>): boolean {
  const formats = Array.isArray(options.formats) ? options.formats : [];
  const v1Marker =
    V1_ONLY_KEYS.some((key) => options[key] !== undefined) ||
    formats.some((format) => typeof format === 'string' && V1_ONLY_FORMATS.has(format));
  if (v1Marker) return false;
  return (
    V2_ONLY_KEYS.some((key) => options[key] !== undefined) ||
    formats.some((format) => typeof format === 'object' && format !== null)
  );
}

/**
 * v1 scrape options in v2 names: `parsePDF` true -> `parsers: ['pdf']`, false -> `[]`;
 * `json`/`extract` format strings (or a lone `jsonOptions`) -> `{type:'json', schema, prompt}`
 * (`systemPrompt` has no v2 field and is dropped); `changeTracking` string (or a lone
 * `changeTrackingOptions`) -> `{type:'changeTracking', modes, schema, prompt, tag}`;
 * `screenshot@fullPage` -> `{type:'screenshot', fullPage:true}`; the v1 defaults that differ
 * from v2 (`V1_SCRAPE_DEFAULTS`) are written out where the record leaves them out. Fields
 * already in v2 names (for example `parsers`) are kept and win; options that are wholly in v2
 * names (`echoesV2ScrapeOptions`) get no v1 defaults. Pure.
 */
export function normaliseV1ScrapeOptions(options: V1ScrapeOptions): Record<string, unknown> {
  const { parsePDF, jsonOptions, changeTrackingOptions, formats, ...rest } = options;
  const out: Record<string, unknown> = { ...rest };
  if (parsePDF !== undefined && out.parsers === undefined) out.parsers = parsePDF ? ['pdf'] : [];
  let sawJson = false;
  let sawChangeTracking = false;
  const mapped: unknown[] = (formats ?? []).map((format) => {
    if (format === 'json' || format === 'extract') {
      sawJson = true;
      return jsonFormatFrom(options);
    }
    if (format === 'changeTracking') {
      sawChangeTracking = true;
      return changeTrackingFormatFrom(options);
    }
    if (format === 'screenshot@fullPage') return { type: 'screenshot', fullPage: true };
    if (typeof format === 'object' && format !== null) {
      const type = (format as { type?: unknown }).type;
      if (type === 'json') sawJson = true;
      if (type === 'changeTracking') sawChangeTracking = true;
    }
    return format;
  });
  if (jsonOptions !== undefined && !sawJson) mapped.push(jsonFormatFrom(options));
  if (changeTrackingOptions !== undefined && !sawChangeTracking) {
    mapped.push(changeTrackingFormatFrom(options));
  }
  if (formats !== undefined || mapped.length > 0) out.formats = mapped;
  if (!echoesV2ScrapeOptions(options)) {
    for (const [key, value] of Object.entries(V1_SCRAPE_DEFAULTS)) {
      if (out[key] === undefined) out[key] = value;
    }
  }
  return out;
}

/**
 * v1 crawl options in v2 names (Versioning, crawl option mapping): `maxDepth` ->
 * `maxDiscoveryDepth`; `ignoreSitemap` true -> `sitemap: 'skip'`, false -> `'include'`;
 * `allowBackwardCrawling` -> `crawlEntireDomain`. A v2 name already present wins; a v1 value
 * of an unexpected type is kept under its v1 name rather than lost. Pure.
 */
export function normaliseV1CrawlOptions(options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...options };
  const rename = (from: string, to: string, value: unknown) => {
    delete out[from];
    if (out[to] === undefined) out[to] = value;
  };
  if (typeof options.maxDepth === 'number') {
    rename('maxDepth', 'maxDiscoveryDepth', options.maxDepth);
  }
  if (typeof options.ignoreSitemap === 'boolean') {
    rename('ignoreSitemap', 'sitemap', options.ignoreSitemap ? 'skip' : 'include');
  }
  if (typeof options.allowBackwardCrawling === 'boolean') {
    rename('allowBackwardCrawling', 'crawlEntireDomain', options.allowBackwardCrawling);
  }
  return out;
}

/** A v1 active-crawl record in the v2 shape. Pure; the input is not mutated. */
export function normaliseV1Crawl(record: ActiveCrawlV1): ActiveCrawlV2 {
  const { scrapeOptions, ...options } = record.options;
  const crawlOptions = normaliseV1CrawlOptions(options);
  return {
    ...record,
    options:
      scrapeOptions === undefined
        ? crawlOptions
        : { ...crawlOptions, scrapeOptions: normaliseV1ScrapeOptions(scrapeOptions) },
  };
}

export const ParamsPreviewRequestSchema = z.strictObject({
  /** The start URL. */
  url: z.url(),
  /** What to crawl, in natural language; max 10000 characters. */
  prompt: z.string().min(1).max(LIMITS.crawl.previewPromptMaxChars),
});
export type ParamsPreviewRequest = z.infer<typeof ParamsPreviewRequestSchema>;

export const ParamsPreviewResponseSchema = z.looseObject({
  success: z.literal(true),
  data: z.looseObject({
    url: z.string(),
    includePaths: z.array(z.string()).optional(),
    excludePaths: z.array(z.string()).optional(),
    limit: z.int().optional(),
    maxDiscoveryDepth: z.int().optional(),
    sitemap: z.string().optional(),
    crawlEntireDomain: z.boolean().optional(),
  }),
});
export type ParamsPreviewResponse = z.infer<typeof ParamsPreviewResponseSchema>;
