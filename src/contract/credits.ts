/**
 * Credit rules of a search (api-notes.md "Credits (search)" and the reference's Limits). Pure.
 *
 * creditsUsed = search part + scrape part.
 * - search part: ceil(results / 10) * 2, or * 10 with enterprise `zdr` (`anon` stays 2);
 *   plus 2 per URL scanned by threat protection `normal`; 0 results cost 0.
 * - scrape part, per successfully scraped result, only when formats are requested: 1; a json
 *   format makes it 5; +4 each for a question format, a highlights format, lockdown, redactPII;
 *   +1 per PDF page beyond the first (when PDFs are parsed); a failed scrape costs 0.
 */

import { formatsRequested } from './defaults.ts';
import { hasFormat } from './formats.ts';
import { LIMITS } from './limits.ts';
import { pdfParsingEnabled, type ScrapeOptions } from './scrape-options.ts';
import type { SearchRequest } from './search.ts';

export const CREDITS = {
  /** Results per billing block of the search part. */
  resultsPerBlock: 10,
  perBlock: 2,
  perBlockZdr: 10,
  perBlockAnon: 2,
  perScannedUrl: 2,
  scrapeBase: 1,
  scrapeJson: 5,
  scrapeSurcharge: 4,
  perExtraPdfPage: 1,
} as const;

type CreditRequest = Pick<SearchRequest, 'enterprise' | 'scrapeOptions' | 'threatProtection'>;

/** Search part: per block of 10 results (10 with zdr, else 2), plus 2 per URL scanned. */
export function searchPartCredits(
  request: Pick<SearchRequest, 'enterprise'>,
  totalResults: number,
  scannedUrls = 0,
): number {
  if (totalResults <= 0) return 0;
  const enterprise = request.enterprise ?? [];
  const perBlock = enterprise.includes('zdr')
    ? CREDITS.perBlockZdr
    : enterprise.includes('anon')
      ? CREDITS.perBlockAnon
      : CREDITS.perBlock;
  const blocks = Math.ceil(totalResults / CREDITS.resultsPerBlock);
  return blocks * perBlock + Math.max(0, scannedUrls) * CREDITS.perScannedUrl;
}

export interface ScrapeDocumentUsage {
  /** Pages of the document when it was a parsed PDF; absent or 0/1 for one page. */
  pdfPages?: number;
}

/** Credits of one successfully scraped document with these scrape options. */
export function scrapeCreditsPerDocument(
  options: ScrapeOptions | undefined,
  usage: ScrapeDocumentUsage = {},
): number {
  const formats = options?.formats;
  let credits = hasFormat(formats, 'json') ? CREDITS.scrapeJson : CREDITS.scrapeBase;
  if (hasFormat(formats, 'question')) credits += CREDITS.scrapeSurcharge;
  if (hasFormat(formats, 'highlights')) credits += CREDITS.scrapeSurcharge;
  if (options?.lockdown === true) credits += CREDITS.scrapeSurcharge;
  if (options?.redactPII !== undefined && options.redactPII !== false) {
    credits += CREDITS.scrapeSurcharge;
  }
  const pages = usage.pdfPages ?? 0;
  if (pages > 1 && pdfParsingEnabled(options)) credits += (pages - 1) * CREDITS.perExtraPdfPage;
  return credits;
}

export interface SearchUsage {
  /** Results returned over all sources. */
  totalResults: number;
  /** Results whose scrape succeeded (failed scrapes cost nothing). */
  scrapedOk: number;
  /** Page counts of the successfully scraped documents, one entry per document (PDFs only). */
  pdfPagesByDoc?: readonly number[];
  /** URLs scanned by threat protection `normal`. Default 0. */
  scannedUrls?: number;
}

/** The `creditsUsed` a search with this request and usage costs. */
export function searchCredits(request: CreditRequest, usage: SearchUsage): number {
  const searchPart = searchPartCredits(request, usage.totalResults, usage.scannedUrls ?? 0);
  if (!formatsRequested(request) || usage.totalResults <= 0) return searchPart;
  let scrapePart = 0;
  for (let doc = 0; doc < usage.scrapedOk; doc++) {
    const pdfPages = usage.pdfPagesByDoc?.[doc];
    scrapePart += scrapeCreditsPerDocument(
      request.scrapeOptions,
      pdfPages === undefined ? {} : { pdfPages },
    );
  }
  return searchPart + scrapePart;
}

export interface CreditEstimate {
  /** No results at all: nothing is billed. */
  min: number;
  /**
   * Every source returns `limit` results, every result is scraped successfully, and with threat
   * protection `normal` in the request every result URL is scanned. A result may be a PDF of
   * `maxPages` pages when a pdf parser bounds them (`parsers: [{type: pdf, maxPages}]`);
   * without that bound its pages beyond the first are not foreseeable and are not included.
   */
  max: number;
}

/**
 * Most pages a PDF result may be billed for: the `maxPages` of the first pdf parser object, as
 * the service reads it; undefined when that parser sets none (or there is none).
 */
function pdfPagesBound(options: ScrapeOptions | undefined): number | undefined {
  if (!pdfParsingEnabled(options)) return undefined;
  const parser = options?.parsers?.find((p) => typeof p === 'object' && p.type === 'pdf');
  return typeof parser === 'object' ? parser.maxPages : undefined;
}

/** A `filetype:pdf` operator in a query (not negated): its results are PDFs. */
const FILETYPE_PDF = /(?:^|\s)filetype:\s*\.?pdf(?=\s|$)/i;

/**
 * Whether a search asks for PDF results (`categories: [pdf]`, or `filetype:pdf` in its query)
 * and scrapes them with no bound on their pages (PDF parsing on, no `maxPages`): each page of a
 * PDF beyond its first costs a credit, so what it costs has no foreseeable bound. (Any search
 * may find a PDF; one that asks for them finds mostly PDFs.)
 */
export function pdfPagesUnbounded(
  request: Pick<CreditRequest, 'scrapeOptions'> &
    Pick<SearchRequest, 'categories'> & { query?: string | undefined },
): boolean {
  const asksForPdfs =
    (request.categories ?? []).some(
      (c) => c === 'pdf' || (typeof c === 'object' && c.type === 'pdf'),
    ) || FILETYPE_PDF.test(request.query ?? '');
  return (
    asksForPdfs &&
    formatsRequested(request) &&
    pdfParsingEnabled(request.scrapeOptions) &&
    pdfPagesBound(request.scrapeOptions) === undefined
  );
}

/** Bounds of what a search can cost, before it runs. */
export function estimateSearchCredits(
  request: CreditRequest & Pick<SearchRequest, 'limit' | 'sources'>,
): CreditEstimate {
  const limit = request.limit ?? LIMITS.search.limitDefault;
  const sourceCount = Math.max(1, request.sources?.length ?? 0);
  const results = limit * sourceCount;
  const scanned = request.threatProtection?.mode === 'normal' ? results : 0;
  const pages = pdfPagesBound(request.scrapeOptions);
  const max = searchCredits(request, {
    totalResults: results,
    scrapedOk: results,
    scannedUrls: scanned,
    ...(pages === undefined ? {} : { pdfPagesByDoc: Array.from({ length: results }, () => pages) }),
  });
  return { min: 0, max };
}
