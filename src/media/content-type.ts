/**
 * The type of a downloaded file, verified: the first bytes say what the file is, and the
 * `Content-Type` the host sent must agree (or be a generic `application/octet-stream`). Both
 * must be a type the media kind accepts (kinds.ts). The stored content type and the file's
 * extension come from the verified type, never from the URL. Pure.
 */
import { ACCEPTED_FORMATS, type FileFormat, type MediaKind, type StoredType } from './kinds.ts';

/** Bytes `sniffFormat` needs to see. */
export const SNIFF_BYTES = 16;

const ascii = (head: Buffer, at: number, text: string) =>
  head.length >= at + text.length && head.toString('latin1', at, at + text.length) === text;

/** The format of a file from its first bytes; undefined when not recognised. */
export function sniffFormat(head: Buffer): FileFormat | undefined {
  if (
    head.length >= 8 &&
    head.readUInt32BE(0) === 0x89504e47 &&
    head.readUInt32BE(4) === 0x0d0a1a0a
  )
    return 'png';
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'jpeg';
  if (ascii(head, 0, 'GIF87a') || ascii(head, 0, 'GIF89a')) return 'gif';
  if (ascii(head, 0, 'RIFF') && ascii(head, 8, 'WEBP')) return 'webp';
  if (ascii(head, 0, 'RIFF') && ascii(head, 8, 'WAVE')) return 'wav';
  if (ascii(head, 0, '%PDF-')) return 'pdf';
  if (ascii(head, 0, 'OggS')) return 'ogg';
  if (head.length >= 4 && head.readUInt32BE(0) === 0x1a45dfa3) return 'ebml';
  if (ascii(head, 4, 'ftyp')) return 'isobmff';
  if (ascii(head, 0, 'ID3')) return 'mp3';
  if (head.length >= 2 && head[0] === 0xff && (head[1]! & 0xe0) === 0xe0) {
    // MPEG audio frame sync: layer bits 00 are ADTS (AAC), anything else MPEG-1/2 audio.
    return (head[1]! & 0x06) === 0 ? 'aac' : 'mp3';
  }
  return undefined;
}

/** Declared content types and the format each names. */
const DECLARED: Record<string, FileFormat> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/pjpeg': 'jpeg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/mpeg3': 'mp3',
  'audio/aac': 'aac',
  'audio/aacp': 'aac',
  'audio/mp4': 'isobmff',
  'audio/m4a': 'isobmff',
  'audio/x-m4a': 'isobmff',
  'video/mp4': 'isobmff',
  'video/quicktime': 'isobmff',
  'application/mp4': 'isobmff',
  'audio/ogg': 'ogg',
  'video/ogg': 'ogg',
  'application/ogg': 'ogg',
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/webm': 'ebml',
  'video/webm': 'ebml',
  'video/x-matroska': 'ebml',
  'audio/x-matroska': 'ebml',
  'application/pdf': 'pdf',
};

/** Types that say nothing about the content. */
const GENERIC = new Set(['', 'application/octet-stream', 'binary/octet-stream']);

/** `Image/PNG; charset=x` -> `image/png`; a missing header -> ''. */
export function bareType(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return (value ?? '').split(';')[0]!.trim().toLowerCase();
}

export type TypeRefusal = { ok: false; code: 'MEDIA_TYPE_REFUSED'; message: string };
export type TypeCheck = { ok: true; type: StoredType } | TypeRefusal;

function refused(message: string): TypeRefusal {
  return { ok: false, code: 'MEDIA_TYPE_REFUSED', message };
}

/**
 * Before reading the body: refuses a declared type that the kind can never accept. Generic and
 * missing types pass (the bytes decide).
 */
export function checkDeclaredType(
  kind: MediaKind,
  header: string | string[] | undefined,
): TypeRefusal | undefined {
  const declared = bareType(header);
  if (GENERIC.has(declared)) return undefined;
  const format = DECLARED[declared];
  if (format === undefined || ACCEPTED_FORMATS[kind][format] === undefined) {
    return refused(`the host sent Content-Type ${declared}, which is not ${kind} media`);
  }
  return undefined;
}

/** After the first bytes: what the file is, checked against the declared type and the kind. */
export function verifyType(
  kind: MediaKind,
  header: string | string[] | undefined,
  head: Buffer,
): TypeCheck {
  const early = checkDeclaredType(kind, header);
  if (early) return early;
  const format = sniffFormat(head);
  const declared = bareType(header);
  if (format === undefined) {
    return refused(
      `the file's first bytes are no known ${kind} format (declared ${declared || 'nothing'})`,
    );
  }
  const named = DECLARED[declared];
  if (named !== undefined && named !== format) {
    return refused(`the host declared ${declared} but the file is ${format}`);
  }
  const type = ACCEPTED_FORMATS[kind][format];
  if (!type) return refused(`a ${format} file is not accepted as ${kind}`);
  return { ok: true, type };
}
