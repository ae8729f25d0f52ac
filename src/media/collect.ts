/**
 * The media a result carries, and finding the same media in a re-issued answer. Pure.
 *
 * A web or news result carries `screenshot`, `audio` and `video` URLs (when those formats were
 * asked for) and, when the scrape ran actions, `actions.screenshots[]` and `actions.pdfs[]`.
 * A re-issued search is matched to a stored result by the result's own `url`, not by its
 * position: the fresh answer may order results differently.
 */
import type { MediaKind } from './kinds.ts';

export interface ItemMedia {
  kind: MediaKind;
  /** Index among the item's outputs of this kind (action outputs); 0 for the fields. */
  itemIndex: number;
  url: string;
}

const FIELD_KINDS = ['screenshot', 'audio', 'video'] as const;

function asUrl(value: unknown): string | undefined {
  if (typeof value === 'string' && value.length > 0) return value;
  if (value && typeof value === 'object' && typeof (value as { url?: unknown }).url === 'string') {
    return (value as { url: string }).url;
  }
  return undefined;
}

function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The media URLs of one result item, of the wanted kinds. */
export function mediaOfItem(
  item: Record<string, unknown>,
  wanted: ReadonlySet<MediaKind>,
): ItemMedia[] {
  const out: ItemMedia[] = [];
  for (const kind of FIELD_KINDS) {
    const url = wanted.has(kind) ? asUrl(item[kind]) : undefined;
    if (url) out.push({ kind, itemIndex: 0, url });
  }
  const actions = item.actions as Record<string, unknown> | undefined;
  if (actions && typeof actions === 'object') {
    const lists: Array<[MediaKind, unknown]> = [
      ['action-screenshot', actions.screenshots],
      ['action-pdf', actions.pdfs],
    ];
    for (const [kind, list] of lists) {
      if (!wanted.has(kind)) continue;
      listOf(list).forEach((entry, itemIndex) => {
        const url = asUrl(entry);
        if (url) out.push({ kind, itemIndex, url });
      });
    }
  }
  return out;
}

/** One stored media item to find again. */
export interface MediaToMatch {
  source: string;
  kind: MediaKind;
  itemIndex: number;
  /** The `url` of the result the media belongs to. */
  resultUrl: string | null;
}

export type FreshMatch =
  | { found: true; url: string }
  | { found: false; reason: 'RESULT_GONE' | 'MEDIA_GONE'; message: string };

/** The items of a search answer's `data`, by source. */
export type AnswerData = Record<string, unknown>;

/**
 * The fresh URL of `media` in a re-issued answer: among the results with the same `url` (those
 * of the same source first, then the others), the first that carries media of the same kind and
 * index. A URL can come back twice (in two sources, or twice in one), and one occurrence's
 * scrape can fail while another's carries the file.
 */
export function matchFresh(data: AnswerData, media: MediaToMatch): FreshMatch {
  if (media.resultUrl === null) {
    return {
      found: false,
      reason: 'RESULT_GONE',
      message: 'the stored result has no url to match',
    };
  }
  const sameUrl = (item: unknown): item is Record<string, unknown> =>
    !!item && typeof item === 'object' && (item as { url?: unknown }).url === media.resultUrl;
  const others = Object.entries(data).filter(([source]) => source !== media.source);
  const occurrences = [data[media.source], ...others.map(([, items]) => items)].flatMap((items) =>
    listOf(items).filter(sameUrl),
  );
  if (occurrences.length === 0) {
    return {
      found: false,
      reason: 'RESULT_GONE',
      message: `the re-issued search no longer returns ${media.resultUrl}`,
    };
  }
  const kinds = new Set([media.kind]);
  for (const item of occurrences) {
    const fresh = mediaOfItem(item, kinds).find((m) => m.itemIndex === media.itemIndex);
    if (fresh) return { found: true, url: fresh.url };
  }
  return {
    found: false,
    reason: 'MEDIA_GONE',
    message: `the re-issued search returns ${media.resultUrl} without its ${media.kind}${media.itemIndex ? ` #${media.itemIndex}` : ''}`,
  };
}
