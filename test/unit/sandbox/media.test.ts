import { createHash } from 'node:crypto';
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
    // The signature covers the whole query: any other parameter changed or added breaks it.
    for (const changed of [
      { 'X-Goog-Credential': 'attacker/20260101/auto/storage/goog4_request' },
      { 'X-Goog-Algorithm': 'NONE' },
      { 'response-content-type': 'text/html' },
    ]) {
      expect(signer.verify(path, { ...query, ...changed }, T0)).toMatchObject({
        status: 403,
        code: 'SignatureDoesNotMatch',
      });
    }
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
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    const file = (url: string) => new URL(url).pathname.slice('/media/'.length);
    expect(ledger).toEqual({
      requests: 7,
      withAuthorization: 1,
      calls: { '200': 5, '400': 1, '403': 1 },
      served: {
        [file(doc.screenshot)]: sha(png.rawPayload),
        [file(doc.audio)]: sha(mp3.rawPayload),
        [file(doc.video)]: sha(mp4.rawPayload),
      },
    });
    await sandbox.close();
  });

  it('signs the screenshots and PDFs of actions into `actions` of each scraped result', async () => {
    const sandbox = app({ now: () => T0 });
    let web: Array<{ url: string; actions?: { screenshots: string[]; pdfs: string[] } }> = [];
    for (let i = 0; i < 10 && !web.some((d) => d.actions); i++) {
      const res = await search(sandbox, {
        query: `actions ${i}`,
        scrapeOptions: {
          formats: ['markdown'],
          actions: [
            { type: 'screenshot' },
            { type: 'wait', milliseconds: 5 },
            { type: 'pdf' },
            { type: 'screenshot', fullPage: true },
          ],
        },
      });
      web = res.json().data.web ?? [];
    }
    const doc = web.find((d) => d.actions)!;
    expect(doc.actions!.screenshots).toHaveLength(2);
    expect(doc.actions!.pdfs).toHaveLength(1);
    const pdfUrl = new URL(doc.actions!.pdfs[0]!);
    expect(pdfUrl.searchParams.get('X-Goog-Expires')).toBe('3600');
    const pdf = await sandbox.inject({ method: 'GET', url: pdfUrl.pathname + pdfUrl.search });
    expect(pdf.statusCode).toBe(200);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.rawPayload.subarray(0, 5).toString()).toBe('%PDF-');
    const shots = doc.actions!.screenshots.map((u) => new URL(u).pathname);
    expect(new Set(shots).size).toBe(2);
    await sandbox.close();
  });

  it('media faults: tampered signatures (stable per file), 503 answers, slow bodies', async () => {
    const sandbox = app({ now: () => T0, mediaFaults: { tamper: 1 } });
    const first = await search(sandbox, {
      query: 'tamper me',
      scrapeOptions: { formats: ['audio'] },
    });
    const doc = (first.json().data.web as Array<{ audio?: string }>).find((d) => d.audio)!;
    const get = (url: string) => {
      const u = new URL(url);
      return sandbox.inject({ method: 'GET', url: u.pathname + u.search });
    };
    const tampered = await get(doc.audio!);
    expect(tampered.statusCode).toBe(403);
    expect(tampered.body).toMatch(/SignatureDoesNotMatch/);

    sandbox.sandbox.control.setMediaFaults({ error503: 1 });
    expect((await get(doc.audio!)).statusCode).toBe(503);
    sandbox.sandbox.control.setMediaFaults({ bytesPerSecond: 20_000 });
    const again = await search(sandbox, {
      query: 'tamper me',
      scrapeOptions: { formats: ['audio'] },
    });
    const fresh = (again.json().data.web as Array<{ audio?: string }>).find((d) => d.audio)!;
    const started = Date.now();
    const slow = await get(fresh.audio!);
    expect(slow.statusCode).toBe(200);
    expect(slow.rawPayload.length).toBeGreaterThan(3000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(() => sandbox.sandbox.control.setMediaFaults({ tamper: 2 })).toThrow(/0..1/);
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

  it('PDF has a cross-reference table pointing at its objects', () => {
    const pdf = mediaBytes('pdf', 'abc').toString('latin1');
    expect(pdf.startsWith('%PDF-1.4\n')).toBe(true);
    const xref = Number(/startxref\n(\d+)\n%%EOF\n$/.exec(pdf)?.[1]);
    expect(pdf.slice(xref, xref + 4)).toBe('xref');
    const offsets = [...pdf.slice(xref).matchAll(/^(\d{10}) 00000 n $/gm)].map((m) => Number(m[1]));
    expect(offsets).toHaveLength(5);
    expect(offsets.map((o) => pdf.slice(o, o + 8))).toEqual(
      [1, 2, 3, 4, 5].map((n) => `${n} 0 obj\n`),
    );
  });

  it('padded files stay valid and grow by about the padding', () => {
    const pad = 10_000;
    const png = mediaBytes('screenshot', 'abc', pad);
    const types: string[] = [];
    for (let o = 8; o < png.length; ) {
      const len = png.readUInt32BE(o);
      types.push(png.subarray(o + 4, o + 8).toString('ascii'));
      expect(png.readUInt32BE(o + 8 + len)).toBe(crc32(png.subarray(o + 4, o + 8 + len)));
      o += 12 + len;
    }
    expect(types).toEqual(['IHDR', 'IDAT', 'hvPd', 'IEND']);
    const mp3 = mediaBytes('audio', 'abc', pad);
    expect(mp3.length % 417).toBe(0);
    expect(mp3.length - mediaBytes('audio', 'abc').length).toBeGreaterThanOrEqual(pad);
    const mp4 = mediaBytes('video', 'abc', pad);
    let o = 0;
    while (o < mp4.length) o += mp4.readUInt32BE(o);
    expect(o).toBe(mp4.length);
    const pdf = mediaBytes('pdf', 'abc', pad).toString('latin1');
    const xref = Number(/startxref\n(\d+)\n%%EOF\n$/.exec(pdf)?.[1]);
    expect(pdf.slice(xref, xref + 4)).toBe('xref');
    expect(pdf.length).toBeGreaterThan(pad);
    for (const kind of ['screenshot', 'audio', 'video', 'pdf'] as const) {
      expect(mediaBytes(kind, 'abc', pad).length).toBeGreaterThan(pad);
    }
  });
});
