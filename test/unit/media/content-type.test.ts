import { describe, expect, it } from 'vitest';
import {
  bareType,
  checkDeclaredType,
  sniffFormat,
  verifyType,
} from '../../../src/media/content-type.ts';
import { mediaBytes } from '../../../src/sandbox/media-bytes.ts';

const bytes = (...b: number[]) => Buffer.from(b);
const text = (s: string, pad = 16) => Buffer.concat([Buffer.from(s, 'latin1'), Buffer.alloc(pad)]);

describe('sniffFormat', () => {
  it('recognises the formats of screenshots, audio, video and PDFs', () => {
    expect(sniffFormat(mediaBytes('screenshot', 'a'))).toBe('png');
    expect(sniffFormat(mediaBytes('audio', 'a'))).toBe('mp3');
    expect(sniffFormat(mediaBytes('video', 'a'))).toBe('isobmff');
    expect(sniffFormat(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe('jpeg');
    expect(sniffFormat(text('RIFF\0\0\0\0WEBPVP8 '))).toBe('webp');
    expect(sniffFormat(text('RIFF\0\0\0\0WAVEfmt '))).toBe('wav');
    expect(sniffFormat(text('GIF89a'))).toBe('gif');
    expect(sniffFormat(text('%PDF-1.7'))).toBe('pdf');
    expect(sniffFormat(text('OggS'))).toBe('ogg');
    expect(sniffFormat(bytes(0x1a, 0x45, 0xdf, 0xa3, 0x01))).toBe('ebml');
    expect(sniffFormat(text('ID3\x04'))).toBe('mp3');
    expect(sniffFormat(bytes(0xff, 0xf1, 0x50))).toBe('aac');
    expect(sniffFormat(text('<html><body>'))).toBeUndefined();
    expect(sniffFormat(Buffer.alloc(0))).toBeUndefined();
  });
});

describe('verifyType', () => {
  const png = mediaBytes('screenshot', 'x').subarray(0, 16);
  const mp4 = mediaBytes('video', 'x').subarray(0, 16);

  it('takes the stored type and extension from the bytes, per kind', () => {
    expect(verifyType('screenshot', 'image/png', png)).toEqual({
      ok: true,
      type: { contentType: 'image/png', ext: 'png' },
    });
    expect(verifyType('screenshot', 'application/octet-stream', png)).toMatchObject({ ok: true });
    expect(verifyType('screenshot', undefined, png)).toMatchObject({ ok: true });
    expect(verifyType('video', 'video/mp4; codecs="avc1"', mp4)).toEqual({
      ok: true,
      type: { contentType: 'video/mp4', ext: 'mp4' },
    });
    expect(verifyType('audio', 'audio/mp4', mp4)).toEqual({
      ok: true,
      type: { contentType: 'audio/mp4', ext: 'm4a' },
    });
    expect(verifyType('action-pdf', 'application/pdf', text('%PDF-1.4'))).toMatchObject({
      ok: true,
      type: { ext: 'pdf' },
    });
  });

  it('refuses a declared type the kind never takes, bytes that disagree, unknown bytes', () => {
    expect(verifyType('screenshot', 'text/html', png)).toMatchObject({
      ok: false,
      code: 'MEDIA_TYPE_REFUSED',
      message: 'the host sent Content-Type text/html, which is not screenshot media',
    });
    expect(verifyType('screenshot', 'image/jpeg', png)).toMatchObject({
      ok: false,
      message: 'the host declared image/jpeg but the file is png',
    });
    expect(verifyType('audio', 'application/octet-stream', png)).toMatchObject({
      ok: false,
      message: 'a png file is not accepted as audio',
    });
    expect(verifyType('video', undefined, text('<html>'))).toMatchObject({ ok: false });
    expect(verifyType('screenshot', 'image/gif', text('GIF89a'))).toMatchObject({ ok: false });
  });

  it('checks the declared type before any byte is read', () => {
    expect(checkDeclaredType('audio', 'audio/mpeg')).toBeUndefined();
    expect(checkDeclaredType('audio', '')).toBeUndefined();
    expect(checkDeclaredType('audio', 'video/mp4')).toBeUndefined(); // same container as audio/mp4
    expect(checkDeclaredType('audio', 'image/png')).toMatchObject({ ok: false });
    expect(checkDeclaredType('video', ['text/html', 'video/mp4'])).toMatchObject({ ok: false });
    expect(bareType(' Image/PNG ; x=1')).toBe('image/png');
  });
});
