/**
 * The search response (200). Response schemas are tolerant: unknown keys pass through, since
 * servers add fields over time.
 */
import { z } from 'zod';

/** `metadata` of a scraped document. */
export const DocumentMetadataSchema = z.looseObject({
  title: z.union([z.string(), z.array(z.string())]).optional(),
  description: z.union([z.string(), z.array(z.string())]).optional(),
  /** The originally requested URL (may differ from `url` after redirects). */
  sourceURL: z.string().optional(),
  /** The final URL after redirects. */
  url: z.string().optional(),
  statusCode: z.int().optional(),
  /** PDF inputs: pages parsed, capped by the parser's maxPages. */
  numPages: z.int().optional(),
  /** PDF inputs: true page count, omitted when undeterminable; > numPages means truncated. */
  totalPages: z.int().optional(),
  /** Set when the scrape failed (then `statusCode` is typically 500 and nothing is billed). */
  error: z.string().nullable().optional(),
  creditsUsed: z.number().optional(),
});
export type DocumentMetadata = z.infer<typeof DocumentMetadataSchema>;

/** Fields a scraped document adds to a web or news result. */
const scrapedFields = {
  markdown: z.string().nullable().optional(),
  html: z.string().nullable().optional(),
  rawHtml: z.string().nullable().optional(),
  links: z.array(z.string()).optional(),
  /** Screenshot URL; expires 24 hours after the response. */
  screenshot: z.string().nullable().optional(),
  /** Signed MP3 URL; expires 1 hour after the response. */
  audio: z.string().nullable().optional(),
  /** Signed video URL; expires 1 hour after the response. */
  video: z.string().nullable().optional(),
  metadata: DocumentMetadataSchema.optional(),
};

export const WebResultSchema = z.looseObject({
  url: z.string(),
  title: z.string().nullable().optional(),
  description: z.string().nullable().optional(),
  /** The source category, when categories were requested. */
  category: z.string().optional(),
  ...scrapedFields,
  /** Answer to a `question` format. */
  answer: z.string().optional(),
  /** Selected source text for a `highlights` format (shape not fixed by the reference). */
  highlights: z.unknown().optional(),
  summary: z.string().nullable().optional(),
  json: z.unknown().optional(),
  images: z.array(z.string()).optional(),
});
export type WebResult = z.infer<typeof WebResultSchema>;

export const NewsResultSchema = z.looseObject({
  url: z.string(),
  title: z.string().nullable().optional(),
  snippet: z.string().nullable().optional(),
  date: z.string().nullable().optional(),
  imageUrl: z.string().nullable().optional(),
  position: z.int().optional(),
  category: z.string().optional(),
  ...scrapedFields,
});
export type NewsResult = z.infer<typeof NewsResultSchema>;

export const ImageResultSchema = z.looseObject({
  url: z.string(),
  title: z.string().nullable().optional(),
  imageUrl: z.string().optional(),
  imageWidth: z.int().optional(),
  imageHeight: z.int().optional(),
  position: z.int().optional(),
});
export type ImageResult = z.infer<typeof ImageResultSchema>;

export const SearchDataSchema = z.looseObject({
  web: z.array(WebResultSchema).optional(),
  news: z.array(NewsResultSchema).optional(),
  images: z.array(ImageResultSchema).optional(),
});

/** `data` holds keys only for requested sources that returned results, and can be `{}`. */
export const SearchResponseSchema = z.looseObject({
  success: z.literal(true),
  data: SearchDataSchema,
  creditsUsed: z.int().nonnegative(),
  /** Search job id (a UUIDv7 on the hosted service). */
  id: z.string(),
  warning: z.string().nullable().optional(),
});
export type SearchResponse = z.infer<typeof SearchResponseSchema>;

/** Every result of a response, with the source array it came from. */
export function resultsOf(
  response: SearchResponse,
): Array<
  | { source: 'web'; result: WebResult }
  | { source: 'news'; result: NewsResult }
  | { source: 'images'; result: ImageResult }
> {
  return [
    ...(response.data.web ?? []).map((result) => ({ source: 'web' as const, result })),
    ...(response.data.news ?? []).map((result) => ({ source: 'news' as const, result })),
    ...(response.data.images ?? []).map((result) => ({ source: 'images' as const, result })),
  ];
}
