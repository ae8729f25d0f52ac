/**
 * The search request (body of POST /v2/search). Strict at every level: unknown keys are
 * rejected. Besides the reference's fields it accepts what the hosted service accepts and real
 * clients send, with the service's rules (service-extras.ts): `origin`, `filter`, `lang`
 * (strings), `integration` (the service's fixed names) and `__agentInterop`.
 */
import { z } from 'zod';
import { isHostname } from './hostnames.ts';
import { LIMITS } from './limits.ts';
import { ScrapeOptionsSchema } from './scrape-options.ts';
import { AgentInteropSchema, IntegrationSchema } from './service-extras.ts';
import { isTbs, tbsProblem } from './tbs.ts';
import { ThreatProtectionSchema } from './threat-protection.ts';

export const SOURCE_TYPES = ['web', 'images', 'news'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];
export const CATEGORY_TYPES = ['github', 'research', 'pdf', 'developer'] as const;
export type CategoryType = (typeof CATEGORY_TYPES)[number];

export const DOMAIN_MESSAGE = 'Domain must be a valid hostname without protocol or path';
export const DOMAIN_CONFLICT_MESSAGE = 'includeDomains and excludeDomains cannot both be specified';
export const MIXED_SOURCES_MESSAGE = 'sources must be all strings or all objects, not mixed';
export const MIXED_CATEGORIES_MESSAGE = 'categories must be all strings or all objects, not mixed';

export const TbsSchema = z.string().refine(isTbs, {
  error: (issue) =>
    `Invalid tbs: ${typeof issue.input === 'string' ? tbsProblem(issue.input) : 'not a string'}`,
});

export const SourceTypeSchema = z.enum(SOURCE_TYPES);
export const SourceObjectSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('web'),
    tbs: TbsSchema.optional(),
    location: z.string().optional(),
  }),
  z.strictObject({ type: z.literal('images') }),
  z.strictObject({ type: z.literal('news') }),
]);
export type SourceObject = z.infer<typeof SourceObjectSchema>;
/** One `sources` item: a source type string or a source object. */
export const SourceSchema = z.union([SourceTypeSchema, SourceObjectSchema]);
export type Source = z.infer<typeof SourceSchema>;

export const CategoryTypeSchema = z.enum(CATEGORY_TYPES);
export const CategoryObjectSchema = z.strictObject({ type: CategoryTypeSchema });
export type CategoryObject = z.infer<typeof CategoryObjectSchema>;
/** One `categories` item: a category string or `{type}`. */
export const CategorySchema = z.union([CategoryTypeSchema, CategoryObjectSchema]);
export type Category = z.infer<typeof CategorySchema>;

/** Items all strings or all objects. */
function notMixed(message: string) {
  return (items: readonly unknown[], ctx: z.RefinementCtx) => {
    const strings = items.filter((item) => typeof item === 'string').length;
    if (strings !== 0 && strings !== items.length) ctx.addIssue({ code: 'custom', message });
  };
}

/** A bare hostname, trimmed and lowercased. */
export const DomainSchema = z
  .string()
  .trim()
  .toLowerCase()
  .refine(isHostname, { message: DOMAIN_MESSAGE });

export const EnterpriseOptionSchema = z.enum(['anon', 'zdr']);

/** The search request without cross-field rules (extend, pick or omit from this one). */
export const SearchRequestObjectSchema = z.strictObject({
  /**
   * Required; max 500 characters (the reference's bound; the hosted service allows more). The
   * reference sets no minimum, and the hosted service takes "" too; a pipeline refuses a blank
   * query of its own accord (src/pipeline/validate.ts).
   */
  query: z.string().max(LIMITS.search.queryMaxChars),
  /** Results per source type, 1..100. Default 10. */
  limit: z.int().min(LIMITS.search.limitMin).max(LIMITS.search.limitMax).optional(),
  /** Default `[{type: 'web'}]`. */
  sources: z.array(SourceSchema).superRefine(notMixed(MIXED_SOURCES_MESSAGE)).optional(),
  /** Default `[]` (no category filtering). */
  categories: z.array(CategorySchema).superRefine(notMixed(MIXED_CATEGORIES_MESSAGE)).optional(),
  includeDomains: z.array(DomainSchema).optional(),
  excludeDomains: z.array(DomainSchema).optional(),
  tbs: TbsSchema.optional(),
  /** Comma-separated place names or a country name. */
  location: z.string().optional(),
  /** ISO country code. Default `US`. */
  country: z.string().optional(),
  safe: z.boolean().optional(),
  /** Request timeout in ms, > 0. Default 60000. */
  timeout: z.int().positive().optional(),
  /** Default false. */
  ignoreInvalidURLs: z.boolean().optional(),
  /** Default true. */
  highlights: z.boolean().optional(),
  enterprise: z.array(EnterpriseOptionSchema).optional(),
  scrapeOptions: ScrapeOptionsSchema.optional(),
  threatProtection: ThreatProtectionSchema.optional(),
  /** Client identification (the official JS client sends `js-sdk@<version>`). */
  origin: z.string().optional(),
  /** One of the hosted service's integration names, for example `n8n` (see INTEGRATIONS). */
  integration: IntegrationSchema.optional(),
  /** Accepted by the hosted service; passed through. */
  filter: z.string().optional(),
  /** Accepted by the hosted service; passed through. */
  lang: z.string().optional(),
  /** Internal to the hosted service: auth, requestId and shouldBill required, other keys dropped. */
  __agentInterop: AgentInteropSchema.optional(),
});

/**
 * The search request with its cross-field rule: `includeDomains` and `excludeDomains` are not
 * both non-empty (issue at the body's root, as the hosted service reports it).
 */
export const SearchRequestSchema = SearchRequestObjectSchema.superRefine((request, ctx) => {
  if ((request.includeDomains?.length ?? 0) > 0 && (request.excludeDomains?.length ?? 0) > 0) {
    ctx.addIssue({ code: 'custom', message: DOMAIN_CONFLICT_MESSAGE, path: [] });
  }
});
/** A validated search request (domains trimmed and lowercased, nothing else changed). */
export type SearchRequest = z.infer<typeof SearchRequestSchema>;
/** What a caller may send (before trimming). */
export type SearchRequestInput = z.input<typeof SearchRequestSchema>;
