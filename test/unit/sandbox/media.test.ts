import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createMediaSigner, scaledLifetimeS } from '../../../src/sandbox/media.ts';
import { crc32, mediaBytes } from '../../../src/sandbox/media-bytes.ts';
import { app, search } from './helpers.ts';

const T0 = Date.UTC(2026, 10, 22, 10, 15, 0);

function pathAndQuery(url: string) {
  const u = new URL(url);
  return { path: u.pathname, query: Object.fromEntries(u.searchParams) };
}

describe('media signing', () => {
  it('signs in GCS V4 form with the scaled lifetime', () => {
    const signer = createMediaSigner(1);
    const url = signer.sign('http://h', 'screenshot', 'https://a.example/x', T0);
    const { query } = pathAndQuery(url);
    expect(query).toMatchObject({
      'X-Goog-Algorithm': 'GOOG4-HMAC-SHA256',
      'X-Goog-Date': '20261122T101500Z',
      'X-Goog-Expires': '86400',
      'X-Goog-Signature': expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(scaledLifetimeS('audio', 1)).toBe(3600);
    expect(scaledLifetimeS('screenshot', 0.001)).toBe(87);
    expect(scaledLifetimeS('video', 0.001)).toBe(4);
    expect(scaledLifetimeS('video', 1e-9)).toBe(1);
  });

  it('verifies until expiry, then ExpiredToken; tampering gives SignatureDoesNotMatch', () => {
    const signer = createMediaSigner(1);
    const { path, query } = pathAndQuery(
      signer.sign('http://h', 'audio', 'https://a.example/x', T0),
    );
    expect(signer.verify(path, query, T0 + 3_599_999)).toMatchObject({ ok: true, kind: 'audio' });
    expect(signer.verify(path, query, T0 + 3_600_000)).toMatchObject({
      ok: false,
      status: 400,
      code: 'ExpiredToken',
    });
    const longer = { ...query, 'X-Goog-Expires': '999999' };
    expect(signer.verify(path, longer, T0)).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
    const other = createMediaSigner(1);
    expect(other.verify(path, query, T0)).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
  });

  it('serves real bytes, then XML errors, and counts Authorization headers', async () => {
    let nowMs = T0;
    const sandbox = app({ now: () => nowMs, timeScale: 0.001 });
    type Doc = { screenshot?: string; audio?: string; video?: string };
    let res: { data?: { web?: Doc[] } } = {};
    for (let i = 0; i < 10 && !res.data?.web?.some((d) => d.screenshot); i++) {
      res = (
        await search(sandbox, {
          query: `media ${i}`,
          scrapeOptions: { formats: ['screenshot', 'audio', 'video'] },
        })
      ).json();
    }
    const doc = res.data!.web!.find((d) => d.screenshot) as Required<Doc>;
    const get = (url: string, headers: Record<string, string> = {}) => {
      const u = new URL(url);
      return sandbox.inject({ method: 'GET', url: u.pathname + u.search, headers });
    };
    const png = await get(doc.screenshot);
    expect(png.statusCode).toBe(200);
    expect(png.headers['content-type']).toBe('image/png');
    expect(png.rawPayload.subarray(0, 8)).toEqual(
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    );
    const mp3 = await get(doc.audio, { authorization: 'Bearer fc-sandbox' });
    expect(mp3.headers['content-type']).toBe('audio/mpeg');
    expect([mp3.rawPayload[0], mp3.rawPayload[1]]).toEqual([0xff, 0xfb]);
    const mp4 = await get(doc.video);
    expect(mp4.headers['content-type']).toBe('video/mp4');
    expect(mp4.rawPayload.subarray(4, 8).toString()).toBe('ftyp');
    expect((await get(doc.screenshot)).rawPayload).toEqual(png.rawPayload);

    nowMs += 4_000; // audio/video lifetime 3.6 h * 0.001 -> 4 s
    const expired = await get(doc.audio);
    expect(expired.statusCode).toBe(400);
    expect(expired.headers['content-type']).toMatch(/xml/);
    expect(expired.body).toMatch(/<Error><Code>ExpiredToken<\/Code>/);
    expect((await get(doc.screenshot)).statusCode).toBe(200); // 87 s
    const tampered = await get(
      doc.screenshot.replace(/X-Goog-Expires=\d+/, 'X-Goog-Expires=999999'),
    );
    expect(tampered.statusCode).toBe(403);
    expect(tampered.body).toMatch(/<Code>SignatureDoesNotMatch<\/Code>/);

    const ledger = sandbox.sandbox.ledger().media;
    expect(ledger).toEqual({
      requests: 7,
      withAuthorization: 1,
      calls: { '200': 5, '400': 1, '403': 1 },
    });
    await sandbox.close();
  });
});

describe('media bytes', () => {
  it('PNG chunks have valid CRCs and the image data inflates to 16 rows', () => {
    const png = mediaBytes('screenshot', 'abc');
    let o = 8;
    const types: string[] = [];
    while (o < png.length) {
      const len = png.readUInt32BE(o);
      const type = png.subarray(o + 4, o + 8).toString('ascii');
      types.push(type);
      expect(png.readUInt32BE(o + 8 + len)).toBe(crc32(png.subarray(o + 4, o + 8 + len)));
      if (type === 'IDAT')
        expect(inflateSync(png.subarray(o + 8, o + 8 + len)).length).toBe(16 * (1 + 16 * 3));
      o += 12 + len;
    }
    expect(types).toEqual(['IHDR', 'IDAT', 'IEND']);
  });

  it('MP3 is a sequence of 417-byte frames; MP4 boxes add up; bytes depend on the id', () => {
    const mp3 = mediaBytes('audio', 'abc');
    expect(mp3.length % 417).toBe(0);
    for (let o = 0; o < mp3.length; o += 417) expect(mp3.readUInt32BE(o)).toBe(0xfffb90c0);
    const mp4 = mediaBytes('video', 'abc');
    let o = 0;
    const boxes: string[] = [];
    while (o < mp4.length) {
      boxes.push(mp4.subarray(o + 4, o + 8).toString());
      o += mp4.readUInt32BE(o);
    }
    expect(o).toBe(mp4.length);
    expect(boxes).toEqual(['ftyp', 'moov', 'free']);
    expect(mediaBytes('video', 'abd')).not.toEqual(mp4);
  });
});
