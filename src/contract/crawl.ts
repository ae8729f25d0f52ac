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
 * v1 scrape options in v2 names: `parsePDF` true -> `parsers: ['pdf']`, false -> `[]`;
 * `json`/`extract` format strings (or a lone `jsonOptions`) -> `{type:'json', schema, prompt}`
 * (`systemPrompt` has no v2 field and is dropped); `changeTracking` string (or a lone
 * `changeTrackingOptions`) -> `{type:'changeTracking', modes, schema, prompt, tag}`;
 * `screenshot@fullPage` -> `{type:'screenshot', fullPage:true}`. Fields already in v2 names
 * (for example `parsers`) are kept and win. Pure.
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
  return out;
}

/** A v1 active-crawl record in the v2 shape. Pure; the input is not mutated. */
export function normaliseV1Crawl(record: ActiveCrawlV1): ActiveCrawlV2 {
  const { scrapeOptions, ...options } = record.options;
  return {
    ...record,
    options:
      scrapeOptions === undefined
        ? { ...options }
        : { ...options, scrapeOptions: normaliseV1ScrapeOptions(scrapeOptions) },
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
