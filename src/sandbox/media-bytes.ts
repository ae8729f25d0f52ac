/**
 * Small, valid media files generated in code, deterministic per media id: a 16x16 PNG, a
 * sequence of silent MPEG-1 Layer III frames, an ISO BMFF (MP4) file with a movie header, and
 * a one-page PDF (the output of a `pdf` action).
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

/** The files the sandbox serves; action screenshots are `screenshot` files. */
export type MediaKind = 'screenshot' | 'audio' | 'video' | 'pdf';

export const MEDIA_TYPES: Record<MediaKind, { ext: string; contentType: string }> = {
  screenshot: { ext: 'png', contentType: 'image/png' },
  audio: { ext: 'mp3', contentType: 'audio/mpeg' },
  video: { ext: 'mp4', contentType: 'video/mp4' },
  pdf: { ext: 'pdf', contentType: 'application/pdf' },
};

/**
 * The file behind media id `id`. `padBytes` makes it about that much larger, still valid (a
 * private PNG chunk, more MP3 frames, a larger MP4 `free` box, a PDF comment), for benchmarks
 * with realistic sizes.
 */
export function mediaBytes(kind: MediaKind, id: string, padBytes = 0): Buffer {
  const digest = createHash('sha256').update(id).digest();
  const pad = padBytes > 0 ? Buffer.alloc(padBytes, digest) : Buffer.alloc(0);
  if (kind === 'screenshot') return png(digest, pad);
  if (kind === 'audio') return mp3(digest, pad.length);
  if (kind === 'pdf') return pdf(digest, pad.length);
  return mp4(digest, pad);
}

/** A one-page PDF whose text is the digest in hex, with a correct cross-reference table. */
function pdf(digest: Buffer, padBytes: number): Buffer {
  const text = `BT /F1 12 Tf 72 720 Td (harvest sandbox ${digest.toString('hex')}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${text.length} >>\nstream\n${text}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let body = '%PDF-1.4\n';
  // Comment lines of padding (before the objects, so the offsets account for them).
  for (let left = padBytes; left > 0; left -= 80) body += `%${'x'.repeat(Math.min(78, left))}\n`;
  const offsets: number[] = [];
  objects.forEach((object, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** 16x16 RGB: a two-colour diagonal pattern with colours taken from the digest. */
function png(digest: Buffer, pad: Buffer): Buffer {
  const size = 16;
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  const rows: Buffer[] = [];
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 3); // filter byte 0
    for (let x = 0; x < size; x++) {
      const o = (x + y) % 2 === 0 ? 0 : 3;
      row[1 + x * 3] = digest[o]!;
      row[2 + x * 3] = digest[o + 1]!;
      row[3 + x * 3] = digest[o + 2]!;
    }
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(Buffer.concat(rows))),
    // Ancillary, private, safe to copy: decoders skip it.
    ...(pad.length > 0 ? [pngChunk('hvPd', pad)] : []),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, mono, no padding: 417-byte frames. Side info and main
 * data are zero (silence); the digest goes into the ancillary bytes so files differ per id.
 */
function mp3(digest: Buffer, padBytes: number): Buffer {
  const frameBytes = 417;
  const frames = 8 + (digest[0]! % 8) + Math.ceil(padBytes / frameBytes);
  const out = Buffer.alloc(frames * frameBytes);
  for (let f = 0; f < frames; f++) {
    const o = f * frameBytes;
    out[o] = 0xff;
    out[o + 1] = 0xfb;
    out[o + 2] = 0x90;
    out[o + 3] = 0xc0;
    digest.copy(out, o + frameBytes - digest.length);
  }
  return out;
}

function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length, 0);
  head.write(type, 4, 'ascii');
  return Buffer.concat([head, body]);
}

/** ftyp + moov/mvhd (version 0, timescale 1000, duration 1 s) + free box carrying the digest. */
function mp4(digest: Buffer, pad: Buffer): Buffer {
  const ftyp = box(
    'ftyp',
    Buffer.from('isom', 'ascii'),
    Buffer.from([0, 0, 2, 0]),
    Buffer.from('isomiso2mp41', 'ascii'),
  );
  const mvhd = Buffer.alloc(100);
  mvhd.writeUInt32BE(1000, 12); // timescale
  mvhd.writeUInt32BE(1000, 16); // duration
  mvhd.writeUInt32BE(0x00010000, 20); // rate 1.0
  mvhd.writeUInt16BE(0x0100, 24); // volume 1.0
  const matrix = [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000];
  matrix.forEach((v, i) => {
    mvhd.writeUInt32BE(v, 36 + i * 4);
  });
  mvhd.writeUInt32BE(2, 96); // next track id
  return Buffer.concat([ftyp, box('moov', box('mvhd', mvhd)), box('free', digest, pad)]);
}
