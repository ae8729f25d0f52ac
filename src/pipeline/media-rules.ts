/**
 * Rules of the `media` section: where the searches ask for media with signed URLs, whether the
 * file saves what they ask for (and asks for what it saves), and where the files go.
 */
import { type Format, formatType } from '../contract/index.ts';
import type { Finding } from './issues.ts';
import type { Pipeline } from './schema.ts';

type Json = Record<string, unknown>;

/** The switches of the `media` section: which signed URLs harvest saves. */
export const MEDIA_OPTIONS = ['screenshot', 'audio', 'video', 'actions'] as const;
export type MediaOption = (typeof MEDIA_OPTIONS)[number];

/** Action types whose outputs are signed URLs (`actions.screenshots`, `actions.pdfs`). */
const MEDIA_ACTIONS: ReadonlySet<string> = new Set(['screenshot', 'pdf']);

/**
 * Where a request asks for media, by option: format indexes of screenshot, audio and video,
 * and the index of each screenshot or pdf action. `at` is the path within the request.
 */
export function mediaFormats(
  request: Json,
): Array<{ kind: MediaOption; at: Array<string | number> }> {
  const scrape = request.scrapeOptions as Json | undefined;
  const found: Array<{ kind: MediaOption; at: Array<string | number> }> = [];
  const formats = scrape?.formats;
  if (Array.isArray(formats)) {
    formats.forEach((format, formatIndex) => {
      const type = formatType(format as Format);
      if (type === 'screenshot' || type === 'audio' || type === 'video')
        found.push({ kind: type, at: ['scrapeOptions', 'formats', formatIndex] });
    });
  }
  const actions = scrape?.actions;
  if (Array.isArray(actions)) {
    actions.forEach((action, actionIndex) => {
      const type = (action as Json | null)?.type;
      if (typeof type === 'string' && MEDIA_ACTIONS.has(type))
        found.push({ kind: 'actions', at: ['scrapeOptions', 'actions', actionIndex] });
    });
  }
  return found;
}

const EXPIRY_TEXT: Record<MediaOption, string> = {
  screenshot: 'screenshot URLs expire after 24 hours',
  audio: 'audio URLs expire after 1 hour',
  video: 'video URLs expire after 1 hour',
  actions: 'the screenshots and PDFs of actions are signed URLs that expire',
};

/** `media.dir` is a folder inside the data directory: relative, without `..`. */
export function mediaDirInside(media: Pipeline['media']): Finding[] {
  const dir = media?.dir;
  if (dir === undefined) return [];
  const segments = dir.split(/[\\/]+/);
  if (
    /^([\\/]|[A-Za-z]:)/.test(dir) ||
    segments.includes('..') ||
    segments.every((s) => s === '.' || s === '')
  ) {
    return [
      {
        code: 'MEDIA_DIR_OUTSIDE',
        severity: 'error',
        path: ['media', 'dir'],
        message: 'media.dir must be a folder inside the data directory: relative, without ".."',
      },
    ];
  }
  // A folder name with a control character (NUL, a newline) is refused by the file system
  // only when the first download tries to make it: every file of the run would fail.
  if (/\p{Cc}/u.test(dir)) {
    return [
      {
        code: 'MEDIA_DIR_INVALID',
        severity: 'error',
        path: ['media', 'dir'],
        message: 'media.dir must not contain control characters',
      },
    ];
  }
  return [];
}

/**
 * Media requested in formats but not saved (its URLs expire), and media saved but never
 * requested. `requestedAt` holds the file path of the first format requesting each kind.
 */
export function mediaMatchesFormats(
  media: Pipeline['media'],
  requestedAt: ReadonlyMap<MediaOption, Finding['path']>,
): Finding[] {
  const findings: Finding[] = [];
  for (const kind of MEDIA_OPTIONS) {
    const saved = media?.[kind] === true;
    const where = requestedAt.get(kind);
    if (where !== undefined && !saved) {
      findings.push({
        code: 'MEDIA_NOT_SAVED',
        severity: 'warning',
        path: where,
        message: `${EXPIRY_TEXT[kind]} and will not be saved; set media.${kind}: true to keep them`,
      });
    }
    if (where === undefined && saved) {
      findings.push({
        code: 'MEDIA_NOT_REQUESTED',
        severity: 'warning',
        path: ['media', kind],
        message:
          kind === 'actions'
            ? 'no search runs a screenshot or pdf action, so there are no action outputs to save'
            : `no search requests the ${kind} format, so there is no ${kind} to save`,
      });
    }
  }
  return findings;
}
