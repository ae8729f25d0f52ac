/**
 * Success bodies checked against the contract: a 2xx answer whose body is not what the contract
 * says (not an object, `success: false`, a schema mismatch) is refused with a reason naming the
 * first field at fault, which the client turns into a BadResponseError.
 */
import type { z } from 'zod';
import {
  ActiveCrawlsResponseV1Schema,
  ActiveCrawlsResponseV2Schema,
  normaliseV1Crawl,
  ParamsPreviewResponseSchema,
  type SearchResponse,
  SearchResponseSchema,
} from '../contract/index.ts';

export type ActiveCrawlsResponse = z.infer<typeof ActiveCrawlsResponseV2Schema>;
export type ParamsPreviewResponse = z.infer<typeof ParamsPreviewResponseSchema>;

export type Validate<T> = (
  value: unknown,
) => { ok: true; value: T } | { ok: false; reason: string };

/** A 2xx body with `success: false` is off-contract; its `error` text says why. */
function failedSuccess(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return 'body is not a JSON object';
  const record = value as Record<string, unknown>;
  if (record.success === false) {
    return `success status with success:false${typeof record.error === 'string' ? `: ${record.error}` : ''}`;
  }
  return undefined;
}

function schemaValidator<T>(schema: z.ZodType<T>, what: string): Validate<T> {
  return (value) => {
    const failed = failedSuccess(value);
    if (failed) return { ok: false, reason: failed };
    const result = schema.safeParse(value);
    if (result.success) return { ok: true, value: result.data };
    return {
      ok: false,
      reason: `${what} does not match the contract: ${firstIssue(result.error)}`,
    };
  };
}

function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.length > 0 ? issue.path.join('.') : '(root)';
  const more = error.issues.length > 1 ? ` (+${error.issues.length - 1} more)` : '';
  return `${path}: ${issue.message}${more}`;
}

export const validateSearch: Validate<SearchResponse> = schemaValidator(
  SearchResponseSchema as z.ZodType<SearchResponse>,
  'search response',
);
export const validateActiveV2: Validate<ActiveCrawlsResponse> = schemaValidator(
  ActiveCrawlsResponseV2Schema as z.ZodType<ActiveCrawlsResponse>,
  'active crawls (v2)',
);
export const validatePreview: Validate<ParamsPreviewResponse> = schemaValidator(
  ParamsPreviewResponseSchema as z.ZodType<ParamsPreviewResponse>,
  'params preview',
);

/**
 * v1 answers use the v1 scrape-option names in the reference, but real ones may carry v2
 * names: accept either, and hand back v2 records.
 */
export const validateActiveV1: Validate<ActiveCrawlsResponse> = (value) => {
  const failed = failedSuccess(value);
  if (failed) return { ok: false, reason: failed };
  const v1 = ActiveCrawlsResponseV1Schema.safeParse(value);
  if (v1.success) {
    return { ok: true, value: { ...v1.data, crawls: v1.data.crawls.map(normaliseV1Crawl) } };
  }
  const v2 = ActiveCrawlsResponseV2Schema.safeParse(value);
  if (v2.success) return { ok: true, value: v2.data };
  return {
    ok: false,
    reason: `active crawls (v1) does not match the contract: ${firstIssue(v1.error)}`,
  };
};
