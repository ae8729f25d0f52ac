/**
 * A search answer: results (cached per canonical request), scraped fields, credits by the
 * contract's rules, and media URLs signed at answer time. Also the credit rule that lowers
 * `limit` when a team cannot pay for the request as sent.
 */
import {
  estimateSearchCredits,
  type NormalisedSearchRequest,
  type SearchRequest,
  searchCredits,
  withSearchDefaults,
} from '../contract/index.ts';
import type { MediaSigner } from './media.ts';
import type { MediaKind } from './media-bytes.ts';
import { canonicalRequest, generateResults, type ResultSet, totalResults } from './results.ts';
import { mediaKinds, scrapeResult } from './scrape.ts';

/** What a request produces apart from its id, time-dependent media URLs and warning. */
export interface GeneratedSearch {
  data: ResultSet;
  creditsUsed: number;
  /** Media to sign into each web and news result that was scraped successfully. */
  media: MediaKind[];
  /** `JSON.stringify(data)`, kept when no media URLs need signing per answer. */
  dataJson: string | undefined;
}

export type CreditFit = { ok: true; request: SearchRequest; loweredFrom?: number } | { ok: false };

/**
 * Whether `balance` covers the most the request may cost. If not and `limit` was sent, `limit`
 * is lowered to the largest value that fits (at least 1); if `limit` was not sent, it does not
 * fit (402).
 */
export function fitToCredits(request: SearchRequest, balance: number): CreditFit {
  if (estimateSearchCredits(request).max <= balance) return { ok: true, request };
  if (request.limit === undefined) return { ok: false };
  let limit = request.limit - 1;
  while (limit > 1 && estimateSearchCredits({ ...request, limit }).max > balance) limit -= 1;
  return {
    ok: true,
    request: { ...request, limit: Math.max(1, limit) },
    loweredFrom: request.limit,
  };
}

const CACHE_MAX_ENTRIES = 10_000;

export class SearchEngine {
  private cache = new Map<string, GeneratedSearch>();

  constructor(private readonly seed: number) {}

  generate(request: SearchRequest): GeneratedSearch {
    const normalised = withSearchDefaults(request);
    const key = canonicalRequest(normalised);
    let hit = this.cache.get(key);
    if (!hit) {
      hit = this.build(request, normalised);
      if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.clear();
      this.cache.set(key, hit);
    }
    return hit;
  }

  private build(request: SearchRequest, normalised: NormalisedSearchRequest): GeneratedSearch {
    const data = generateResults(normalised, this.seed);
    const total = totalResults(data);
    const scrape = normalised.scrapeOptions;
    const scannedUrls = request.threatProtection?.mode === 'normal' ? total : 0;
    if (!scrape || scrape.formats.length === 0) {
      const creditsUsed = searchCredits(request, {
        totalResults: total,
        scrapedOk: 0,
        scannedUrls,
      });
      return { data, creditsUsed, media: [], dataJson: JSON.stringify(data) };
    }
    const pdfPagesByDoc: number[] = [];
    const scrapeItems = <T extends { url: string; title: string }>(
      items: T[] | undefined,
      description: (item: T) => string,
    ) =>
      items?.map((item) => {
        const outcome = scrapeResult(
          { url: item.url, title: item.title, description: description(item) },
          scrape,
          this.seed,
        );
        if (outcome.ok) pdfPagesByDoc.push(outcome.pdfPages ?? 1);
        return { ...item, ...outcome.fields };
      });
    const scraped: ResultSet = {};
    const web = scrapeItems(data.web, (item) => item.description);
    const news = scrapeItems(data.news, (item) => item.snippet);
    if (web) scraped.web = web;
    if (news) scraped.news = news;
    if (data.images) scraped.images = data.images;
    const creditsUsed = searchCredits(request, {
      totalResults: total,
      scrapedOk: pdfPagesByDoc.length,
      pdfPagesByDoc,
      scannedUrls,
    });
    const media = mediaKinds(scrape);
    return {
      data: scraped,
      creditsUsed,
      media,
      dataJson: media.length === 0 ? JSON.stringify(scraped) : undefined,
    };
  }
}

/** The `data` JSON of an answer: cached text, or results with media URLs signed now. */
export function answerDataJson(
  generated: GeneratedSearch,
  signer: MediaSigner,
  baseUrl: string,
  nowMs: number,
): string {
  if (generated.dataJson !== undefined) return generated.dataJson;
  const sign = <T extends { url: string; metadata?: unknown }>(items: T[] | undefined) =>
    items?.map((item) => {
      const failed = (item.metadata as { statusCode?: number } | undefined)?.statusCode !== 200;
      if (failed) return item;
      const media: Record<string, string> = {};
      for (const kind of generated.media) media[kind] = signer.sign(baseUrl, kind, item.url, nowMs);
      return { ...item, ...media };
    });
  const { web, news, images } = generated.data as {
    web?: Array<{ url: string; metadata?: unknown }>;
    news?: Array<{ url: string; metadata?: unknown }>;
    images?: unknown[];
  };
  const out: Record<string, unknown> = {};
  if (web) out.web = sign(web);
  if (news) out.news = sign(news);
  if (images) out.images = images;
  return JSON.stringify(out);
}
