/**
 * A search answer: results (cached per epoch and canonical request), scraped fields, credits by the
 * contract's rules, and media URLs signed at answer time. Also the credit rule that lowers
 * `limit` when a team cannot pay for the request as sent.
 */
import {
  estimateSearchCredits,
  type NormalisedScrapeOptions,
  type NormalisedSearchRequest,
  type SearchRequest,
  searchCredits,
  withSearchDefaults,
} from '../contract/index.ts';
import { stringifyWithText } from './json-text.ts';
import { type MediaSigner, mediaDraw, mediaId } from './media.ts';
import type { MediaKind } from './media-bytes.ts';
import { canonicalRequest } from './request-key.ts';
import { generateResults, type ResultSet, totalResults } from './results.ts';
import {
  type ActionOutputs,
  actionOutputs,
  mediaKinds,
  type PageWorld,
  scrapeResult,
} from './scrape.ts';
import { type ResolvedWorld, resolveWorld } from './world-options.ts';

/** What a request produces apart from its id, time-dependent media URLs and warning. */
export interface GeneratedSearch {
  creditsUsed: number;
  /** The `data` JSON of every answer, when no media URLs need signing per answer. */
  dataJson: string | undefined;
  /** The results, kept (instead of `dataJson`) when media URLs are signed into them. */
  data: ResultSet | undefined;
  /** Media to sign into each web and news result that was scraped successfully. */
  media: MediaKind[];
  /** Screenshots and PDFs of the request's actions, signed into `actions` of each such result. */
  actions: ActionOutputs;
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

/** Bounds of the answers cache: entries, and characters of their cached `data` JSON. */
const CACHE_MAX_ENTRIES = 10_000;
const CACHE_MAX_CHARS = 64 * 1024 * 1024;

export class SearchEngine {
  private cache = new Map<string, GeneratedSearch>();
  private cachedChars = 0;

  constructor(
    private readonly seed: number,
    private readonly world: ResolvedWorld = resolveWorld({}),
  ) {}

  /** The answer to `request` at `epoch` (cached per epoch and canonical request). */
  generate(request: SearchRequest, epoch = this.world.epoch): GeneratedSearch {
    const normalised = withSearchDefaults(request);
    const canonical = canonicalRequest(normalised);
    const key = epoch === 0 ? canonical : `${epoch}\n${canonical}`;
    let hit = this.cache.get(key);
    if (!hit) {
      hit = this.build(request, normalised, epoch);
      const chars = hit.dataJson?.length ?? 0;
      if (this.cache.size >= CACHE_MAX_ENTRIES || this.cachedChars + chars > CACHE_MAX_CHARS) {
        this.cache.clear();
        this.cachedChars = 0;
      }
      if (chars <= CACHE_MAX_CHARS / 4) {
        this.cache.set(key, hit);
        this.cachedChars += chars;
      }
    }
    return hit;
  }

  private build(
    request: SearchRequest,
    normalised: NormalisedSearchRequest,
    epoch: number,
  ): GeneratedSearch {
    const data = generateResults(normalised, this.seed, { epoch, shares: this.world.shares });
    const total = totalResults(data);
    const scrape = normalised.scrapeOptions;
    const scannedUrls = request.threatProtection?.mode === 'normal' ? total : 0;
    if (!scrape || scrape.formats.length === 0) {
      const creditsUsed = searchCredits(request, {
        totalResults: total,
        scrapedOk: 0,
        scannedUrls,
      });
      return {
        creditsUsed,
        dataJson: JSON.stringify(data),
        data: undefined,
        media: [],
        actions: actionOutputs(undefined),
      };
    }
    const pdfPagesByDoc: number[] = [];
    const scraped: ResultSet = {};
    const at: PageWorld = {
      seed: this.seed,
      epoch,
      contentShare: this.world.shares.content,
      content: this.world.content,
    };
    if (data.web) scraped.web = scrapeItems(data.web, 'description', scrape, at, pdfPagesByDoc);
    if (data.news) scraped.news = scrapeItems(data.news, 'snippet', scrape, at, pdfPagesByDoc);
    if (data.images) scraped.images = data.images;
    const creditsUsed = searchCredits(request, {
      totalResults: total,
      scrapedOk: pdfPagesByDoc.length,
      pdfPagesByDoc,
      scannedUrls,
    });
    const media = mediaKinds(scrape);
    const actions = actionOutputs(scrape);
    return media.length === 0 && actions.screenshots + actions.pdfs === 0
      ? { creditsUsed, dataJson: stringifyWithText(scraped), data: undefined, media, actions }
      : { creditsUsed, dataJson: undefined, data: scraped, media, actions };
  }
}

/**
 * Results merged with their scraped documents; the page count of each successful scrape is
 * pushed to `pdfPagesByDoc` (1 for a document that is not a PDF).
 */
function scrapeItems<
  K extends string,
  T extends { url: string; title: string } & Record<K, string>,
>(
  items: T[],
  descriptionKey: K,
  scrape: NormalisedScrapeOptions,
  at: PageWorld,
  pdfPagesByDoc: number[],
): T[] {
  const out: T[] = [];
  for (const item of items) {
    const outcome = scrapeResult(
      { url: item.url, title: item.title, description: item[descriptionKey] },
      scrape,
      at,
    );
    if (outcome.ok) pdfPagesByDoc.push(outcome.pdfPages ?? 1);
    out.push({ ...item, ...outcome.fields });
  }
  return out;
}

/** What signing the media URLs of one answer needs. */
export interface MediaSigning {
  signer: MediaSigner;
  /** The sandbox's own address (`http://host:port`), asked for only when URLs are signed. */
  baseUrl: () => string;
  nowMs: number;
  /** Share of media files (a stable draw per file) served with a wrong signature. Default 0. */
  tamperShare?: number;
}

/** Signed media fields (and action outputs) merged into each successfully scraped result. */
function signItems<T extends { url: string; metadata?: unknown }>(
  items: T[],
  generated: GeneratedSearch,
  signing: MediaSigning,
  baseUrl: string,
): T[] {
  const sign = (kind: MediaKind, source: string) =>
    signing.signer.sign(baseUrl, kind, source, signing.nowMs, {
      tampered: mediaDraw(mediaId(kind, source)) < (signing.tamperShare ?? 0),
    });
  const { screenshots, pdfs } = generated.actions;
  const out: T[] = [];
  for (const item of items) {
    const failed = (item.metadata as { statusCode?: number } | undefined)?.statusCode !== 200;
    if (failed) {
      out.push(item);
      continue;
    }
    const fields: Record<string, unknown> = {};
    for (const kind of generated.media) fields[kind] = sign(kind, item.url);
    if (screenshots + pdfs > 0) {
      fields.actions = {
        screenshots: Array.from({ length: screenshots }, (_, i) =>
          sign('screenshot', `${item.url}#action-screenshot-${i}`),
        ),
        scrapes: [],
        javascriptReturns: [],
        pdfs: Array.from({ length: pdfs }, (_, i) => sign('pdf', `${item.url}#action-pdf-${i}`)),
      };
    }
    out.push({ ...item, ...fields });
  }
  return out;
}

/** The `data` JSON of an answer: cached text, or results with media URLs signed now. */
export function answerDataJson(generated: GeneratedSearch, signing: MediaSigning): string {
  if (generated.dataJson !== undefined) return generated.dataJson;
  const base = signing.baseUrl();
  // `data` is kept whenever `dataJson` is not.
  const { web, news, images } = generated.data as {
    web?: Array<{ url: string; metadata?: unknown }>;
    news?: Array<{ url: string; metadata?: unknown }>;
    images?: unknown[];
  };
  const out: Record<string, unknown> = {};
  if (web) out.web = signItems(web, generated, signing, base);
  if (news) out.news = signItems(news, generated, signing, base);
  if (images) out.images = images;
  return stringifyWithText(out);
}
