import { SearchRequestSchema } from '../../../src/contract/index.ts';

/** Issues of a search body as `path: message` lines (empty when valid). */
export function searchIssues(body: unknown): string[] {
  const result = SearchRequestSchema.safeParse(body);
  if (result.success) return [];
  return result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
}

/** A search body with the given scrapeOptions. */
export function withScrape(scrapeOptions: unknown): unknown {
  return { query: 'q', scrapeOptions };
}

export const chars = (n: number, c = 'a') => c.repeat(n);
