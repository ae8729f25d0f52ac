/**
 * ScrapeOptions: how each search result is scraped. Request schema: unknown keys are rejected.
 */
import { z } from 'zod';
import { ActionSchema } from './actions.ts';
import { FormatSchema } from './formats.ts';
import { LIMITS } from './limits.ts';
import { ThreatProtectionSchema } from './threat-protection.ts';

const S = LIMITS.scrape;

export const PdfParserObjectSchema = z.strictObject({
  type: z.literal('pdf'),
  /** `fast` embedded text only, `auto` (default) fast then OCR fallback, `ocr` every page. */
  mode: z.enum(['fast', 'auto', 'ocr']).optional(),
  /** Max pages parsed, 1..10000. */
  maxPages: z.int().min(S.parserMaxPagesMin).max(S.parserMaxPagesMax).optional(),
  /** Add a `pages` array to the document. Default false. */
  pages: z.boolean().optional(),
  /** Add typed layout `blocks`. Default false. */
  blocks: z.boolean().optional(),
  /** Join pages with a separator and a `page N` comment. Default false. */
  pageMarkers: z.boolean().optional(),
});

/** One `parsers` item: the string `pdf` or a pdf parser object. */
export const ParserSchema = z.union([z.literal('pdf'), PdfParserObjectSchema]);
export type Parser = z.infer<typeof ParserSchema>;

export const ScrapeLocationSchema = z.strictObject({
  /** ISO 3166-1 alpha-2, uppercase. Default `US`. */
  country: z
    .string()
    .regex(/^[A-Z]{2}$/, { message: 'country must be an ISO 3166-1 alpha-2 code like US' })
    .optional(),
  /** Locale strings in priority order. Default: the language of the location. */
  languages: z.array(z.string()).optional(),
});

export const PII_ENTITIES = [
  'PERSON',
  'EMAIL',
  'PHONE',
  'LOCATION',
  'FINANCIAL',
  'SECRET',
] as const;

export const RedactPIIOptionsSchema = z.strictObject({
  /** Default `accurate`. */
  mode: z.enum(['accurate', 'aggressive', 'fast']).optional(),
  /** Omitted = all entities. */
  entities: z.array(z.enum(PII_ENTITIES)).optional(),
  /** Default `tag`. */
  replaceStyle: z.enum(['tag', 'mask', 'remove']).optional(),
});

export const ProfileSchema = z.strictObject({
  /** 1..128 characters. */
  name: z.string().min(S.profileNameMinChars).max(S.profileNameMaxChars),
  /** Save state back when the interact session stops. Default true. */
  saveChanges: z.boolean().optional(),
});

export const AuditMetadataSchema = z.strictObject({
  /** Max 1024 characters. */
  username: z.string().max(S.auditUsernameMaxChars),
});

export const ProxySchema = z.enum(['basic', 'enhanced', 'auto']);

const nonNegativeMs = () => z.int().nonnegative();

/**
 * The ScrapeOptions object without cross-field rules (extend or pick from this one).
 * Defaults are not applied by the schema; see `withScrapeOptionsDefaults`.
 */
export const ScrapeOptionsObjectSchema = z.strictObject({
  /** Default `[markdown]` for scrape; in search, no formats means no scraping. */
  formats: z.array(FormatSchema).optional(),
  /** Default true. */
  onlyMainContent: z.boolean().optional(),
  /** Default false. */
  onlyCleanContent: z.boolean().optional(),
  includeTags: z.array(z.string()).optional(),
  excludeTags: z.array(z.string()).optional(),
  /** Serve a cached page younger than this, in ms. Default 172800000 (2 years under lockdown). */
  maxAge: nonNegativeMs().optional(),
  /** Cache only, minimum age in ms (1 accepts any). Unset by default. */
  minAge: nonNegativeMs().optional(),
  headers: z.record(z.string(), z.string()).optional(),
  /** Extra delay before fetching, in ms. Default 0. */
  waitFor: nonNegativeMs().optional(),
  /** Default false. */
  mobile: z.boolean().optional(),
  /** Default true. */
  skipTlsVerification: z.boolean().optional(),
  /** In ms, 1000..300000. Default 60000. */
  timeout: z.int().min(S.timeoutMinMs).max(S.timeoutMaxMs).optional(),
  /** Default `[pdf]`; `[]` returns PDFs base64-encoded at a flat 1 credit. */
  parsers: z.array(ParserSchema).optional(),
  actions: z.array(ActionSchema).optional(),
  location: ScrapeLocationSchema.optional(),
  /** Default true. */
  removeBase64Images: z.boolean().optional(),
  /**
   * Not in the reference; the hosted service accepts it (default false) and the official Python
   * client sends it with every scrape option set. The sandbox ignores it.
   */
  fastMode: z.boolean().optional(),
  /** Default true. */
  blockAds: z.boolean().optional(),
  /** Default `auto`. */
  proxy: ProxySchema.optional(),
  /** Default true (forced false by actions or headers). */
  storeInCache: z.boolean().optional(),
  /** Cache only, zero data retention. Default false. */
  lockdown: z.boolean().optional(),
  /** Default false; `true` uses the default RedactPIIOptions. */
  redactPII: z.union([z.boolean(), RedactPIIOptionsSchema]).optional(),
  profile: ProfileSchema.optional(),
  threatProtection: ThreatProtectionSchema.optional(),
  auditMetadata: AuditMetadataSchema.optional(),
});

/** Message of the waitFor/timeout rule. */
export const WAIT_FOR_TIMEOUT_MESSAGE = 'waitFor must not exceed half of timeout';

/**
 * ScrapeOptions with the hosted service's cross-field rule: `waitFor` must not exceed half of
 * `timeout`. Enforced only when `timeout` is given explicitly: the reference states no relation
 * and the conformance data marks `waitFor: 60001` without `timeout` as valid, so the default
 * timeout is not used here (see `hostedServiceWarnings` for that case).
 */
export const ScrapeOptionsSchema = ScrapeOptionsObjectSchema.superRefine((options, ctx) => {
  if (
    options.waitFor !== undefined &&
    options.timeout !== undefined &&
    options.waitFor * 2 > options.timeout
  ) {
    ctx.addIssue({ code: 'custom', message: WAIT_FOR_TIMEOUT_MESSAGE, path: ['waitFor'] });
  }
});
export type ScrapeOptions = z.infer<typeof ScrapeOptionsSchema>;

/** True when PDFs are converted to markdown (parsers absent or holding a pdf parser). */
export function pdfParsingEnabled(options: Pick<ScrapeOptions, 'parsers'> | undefined): boolean {
  const parsers = options?.parsers;
  if (parsers === undefined) return true;
  return parsers.some((parser) => parser === 'pdf' || parser.type === 'pdf');
}
