/**
 * Content identity of a result, for telling a page that changed from one that did not: a hash
 * of the scraped content the pipeline asked for, normalised as little as needed.
 *
 * - Hashed: the output of each scrape format the item carries (markdown, html, rawHtml, links,
 *   summary, json, answer, highlights, images, branding, product, menu), each under its name.
 * - Not hashed: what the search listing says of the page (url, title, description, snippet,
 *   date, position, category), signed media URLs (screenshot, audio, video: new at every
 *   call), `metadata` (the service's per-call details) and `changeTracking` (the service's own
 *   comparison, dated).
 * - An item without any scraped field (a search that asked for no formats) is identified by its
 *   title, description or snippet and image URL, so such pipelines still see a listing change.
 * - Normalised: object keys are sorted (key order is not content); strings are hashed exactly as
 *   sent. Markdown, html, rawHtml and links, stored once in `contents` (../contents.ts), take
 *   part by their stored hash (the SHA-256 of their text), so the hash costs no second pass over
 *   a page's bytes.
 *
 * The hash: the first 64 bits of SHA-256, as 16 hex characters. It is computed when a result is
 * written (`results.change_hash`), so classifying a run reads no content.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../../contract/canonical-json.ts';

/** Item fields holding the output of a scrape format. */
export const CONTENT_FIELDS = [
  'markdown',
  'html',
  'rawHtml',
  'links',
  'summary',
  'json',
  'answer',
  'highlights',
  'images',
  'branding',
  'product',
  'menu',
] as const;

/** Fields that identify an item that carries no scraped content. */
const LISTING_FIELDS = ['title', 'description', 'snippet', 'imageUrl'] as const;

/** Hex characters kept of the SHA-256. */
export const CONTENT_HASH_HEX_CHARS = 16;

/** The hashes of an item's values stored in `contents`, by field. */
export type StoredHashes = Partial<Record<string, Buffer>>;

/** The content hash of an item, whose values in `stored` take part by their stored hash. */
export function contentHash(item: Record<string, unknown>, stored: StoredHashes = {}): string {
  const field = (name: string) => item[name];
  let text = '';
  for (const name of CONTENT_FIELDS) {
    const hashed = stored[name];
    text += hashed === undefined ? part(name, field(name)) : `${name}#${hashed.toString('hex')}\n`;
  }
  if (text === '') {
    text = 'listing\n';
    for (const name of LISTING_FIELDS) text += part(name, field(name));
  }
  return hash('sha256', text, 'buffer').toString('hex', 0, CONTENT_HASH_HEX_CHARS / 2);
}

/** One field's share of the hashed text: its name, its length and its value; '' when absent. */
function part(name: string, value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : canonicalJson(value);
  return `${name}:${text.length}:${text}\n`;
}
