/**
 * The kinds of media harvest saves, and what the reference says of each: how long its signed URL
 * lives (when the URL itself does not say) and which content types are acceptable.
 *
 * Terminology: *media* is a saved file behind a signed URL of a result: its `screenshot`,
 * `audio` or `video` field, or the n-th screenshot or PDF its `actions` produced
 * (`actions.screenshots[n]`, `actions.pdfs[n]`; `itemIndex` n).
 */
import { MEDIA_LIFETIME_MS } from '../contract/index.ts';

export const MEDIA_KINDS = [
  'screenshot',
  'audio',
  'video',
  'action-screenshot',
  'action-pdf',
] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

export function isMediaKind(value: unknown): value is MediaKind {
  return typeof value === 'string' && (MEDIA_KINDS as readonly string[]).includes(value);
}

/**
 * Lifetime of a URL from the response that carried it, in ms, for URLs that do not state their
 * expiry. The reference gives screenshots 24 h and audio and video 1 h. It says nothing of
 * action outputs: their screenshots are taken as screenshots (24 h), their PDFs get the shortest
 * lifetime it names (1 h), so a guess errs towards saving early.
 */
export const REFERENCE_LIFETIME_MS: Record<MediaKind, number> = {
  screenshot: MEDIA_LIFETIME_MS.screenshot,
  audio: MEDIA_LIFETIME_MS.audio,
  video: MEDIA_LIFETIME_MS.video,
  'action-screenshot': MEDIA_LIFETIME_MS.screenshot,
  'action-pdf': MEDIA_LIFETIME_MS.audio,
};

/** A file format harvest recognises by its first bytes. */
export type FileFormat =
  | 'png'
  | 'jpeg'
  | 'webp'
  | 'gif'
  | 'mp3'
  | 'aac'
  | 'ogg'
  | 'wav'
  | 'isobmff'
  | 'ebml'
  | 'pdf';

/** What a verified file is stored as: its content type and file extension. */
export interface StoredType {
  contentType: string;
  ext: string;
}

type Accepted = Partial<Record<FileFormat, StoredType>>;

const IMAGES: Accepted = {
  png: { contentType: 'image/png', ext: 'png' },
  jpeg: { contentType: 'image/jpeg', ext: 'jpg' },
  webp: { contentType: 'image/webp', ext: 'webp' },
};

/** Per kind, the formats accepted and the type each is stored as. */
export const ACCEPTED_FORMATS: Record<MediaKind, Accepted> = {
  screenshot: IMAGES,
  'action-screenshot': IMAGES,
  audio: {
    mp3: { contentType: 'audio/mpeg', ext: 'mp3' },
    aac: { contentType: 'audio/aac', ext: 'aac' },
    isobmff: { contentType: 'audio/mp4', ext: 'm4a' },
    ogg: { contentType: 'audio/ogg', ext: 'ogg' },
    ebml: { contentType: 'audio/webm', ext: 'weba' },
    wav: { contentType: 'audio/wav', ext: 'wav' },
  },
  video: {
    isobmff: { contentType: 'video/mp4', ext: 'mp4' },
    ebml: { contentType: 'video/webm', ext: 'webm' },
    ogg: { contentType: 'video/ogg', ext: 'ogv' },
  },
  'action-pdf': {
    pdf: { contentType: 'application/pdf', ext: 'pdf' },
  },
};

/** The switches of a pipeline's `media` section (screenshot, audio, video, actions). */
export interface MediaSwitches {
  screenshot?: boolean | undefined;
  audio?: boolean | undefined;
  video?: boolean | undefined;
  actions?: boolean | undefined;
}

/** The kinds a pipeline's `media` section saves; `actions` covers action screenshots and PDFs. */
export function kindsToSave(media: MediaSwitches | undefined): MediaKind[] {
  if (!media) return [];
  const kinds: MediaKind[] = [];
  if (media.screenshot) kinds.push('screenshot');
  if (media.audio) kinds.push('audio');
  if (media.video) kinds.push('video');
  if (media.actions) kinds.push('action-screenshot', 'action-pdf');
  return kinds;
}
