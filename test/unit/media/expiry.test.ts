import { describe, expect, it } from 'vitest';
import {
  mediaDeadline,
  parseBasicDate,
  safetyMarginMs,
  urlExpiry,
} from '../../../src/media/expiry.ts';

const T0 = Date.UTC(2026, 10, 22, 10, 15, 0);
const HOUR = 3_600_000;

describe('urlExpiry', () => {
  it('reads GCS V4: X-Goog-Date + X-Goog-Expires', () => {
    const url =
      'https://storage.googleapis.com/b/o.png?X-Goog-Algorithm=GOOG4-HMAC-SHA256&X-Goog-Date=20261122T101500Z&X-Goog-Expires=86400&X-Goog-Signature=ab';
    expect(urlExpiry(url)).toEqual({ source: 'gcs-v4', signedAt: T0, expiresAt: T0 + 24 * HOUR });
  });

  it('reads S3 SigV4, with parameter names in any case', () => {
    const url =
      'https://b.s3.amazonaws.com/o.mp3?x-amz-date=20261122T101500Z&X-AMZ-EXPIRES=3600&X-Amz-Signature=ff';
    expect(urlExpiry(url)).toEqual({ source: 's3-v4', signedAt: T0, expiresAt: T0 + HOUR });
  });

  it('reads GCS V2 and CloudFront canned `Expires` (unix seconds)', () => {
    const v2 = `https://storage.googleapis.com/b/o?GoogleAccessId=x&Expires=${T0 / 1000}&Signature=s`;
    expect(urlExpiry(v2)).toEqual({ source: 'expires', expiresAt: T0 });
    const cf = `https://d111.cloudfront.net/v.mp4?Expires=${T0 / 1000 + 60}&Signature=s&Key-Pair-Id=K`;
    expect(urlExpiry(cf)).toEqual({ source: 'expires', expiresAt: T0 + 60_000 });
  });

  it('reads a CloudFront custom policy and an Azure SAS `se`', () => {
    const policy = Buffer.from(
      JSON.stringify({
        Statement: [{ Resource: '*', Condition: { DateLessThan: { 'AWS:EpochTime': T0 / 1000 } } }],
      }),
    )
      .toString('base64')
      .replace(/\+/g, '-')
      .replace(/=/g, '_')
      .replace(/\//g, '~');
    expect(
      urlExpiry(`https://d.cloudfront.net/a?Policy=${policy}&Signature=s&Key-Pair-Id=K`),
    ).toEqual({
      source: 'cloudfront-policy',
      expiresAt: T0,
    });
    expect(
      urlExpiry('https://a.blob.core.windows.net/c/b?sv=1&se=2026-11-22T10:15:00Z&sig=x'),
    ).toEqual({ source: 'azure-sas', expiresAt: T0 });
  });

  it('says nothing for URLs without an expiry, and malformed values', () => {
    expect(urlExpiry('https://cdn.example/a.png')).toBeUndefined();
    expect(urlExpiry('not a url')).toBeUndefined();
    expect(urlExpiry('https://x/a?X-Goog-Date=2026-11-22&X-Goog-Expires=60')).toBeUndefined();
    expect(urlExpiry('https://x/a?X-Goog-Date=20261122T101500Z&X-Goog-Expires=-5')).toBeUndefined();
    expect(urlExpiry('https://x/a?Expires=soon')).toBeUndefined();
    expect(urlExpiry('https://x/a?se=2026-11-22')).toBeUndefined(); // no sig: not a SAS
    expect(parseBasicDate('20261322T101500Z')).toBeUndefined();
    expect(parseBasicDate('20261131T101500Z')).toBeUndefined();
    expect(parseBasicDate('20261122T101500Z')).toBe(T0);
    expect(parseBasicDate('20261122T1015Z')).toBeUndefined();
  });
});

describe('urlExpiry of times no date can hold', () => {
  const policy = (epoch: number) =>
    Buffer.from(
      JSON.stringify({ Statement: [{ Condition: { DateLessThan: { 'AWS:EpochTime': epoch } } }] }),
    )
      .toString('base64')
      .replace(/\+/g, '-')
      .replace(/=/g, '_')
      .replace(/\//g, '~');

  // A stated time before 1970 or past the largest Date says nothing: such a deadline was refused
  // by the database (its re-issue looped, each call billed) and crashed `harvest status`.
  it.each([
    [
      'GCS V4 signed before 1970',
      'https://h/a.png?X-Goog-Date=19600101T000000Z&X-Goog-Expires=3600',
    ],
    [
      'S3 V4 signed in the year 1000',
      'https://h/a.png?X-Amz-Date=10000101T000000Z&X-Amz-Expires=3600',
    ],
    ['a negative CloudFront policy epoch', `https://h/a.png?Policy=${policy(-1)}&Signature=s`],
    [
      'a CloudFront policy epoch past the largest Date',
      `https://h/a.png?Policy=${policy(1e13)}&Signature=s`,
    ],
    ['an infinite CloudFront policy epoch', `https://h/a.png?Policy=${policy(1e308)}&Signature=s`],
    ['an Azure SAS before 1970', 'https://h/a.png?se=1960-01-01T00:00:00Z&sig=x'],
  ])('%s states no expiry, and the deadline is the reference lifetime', (_name, url) => {
    expect(urlExpiry(url)).toBeUndefined();
    const d = mediaDeadline({ url, kind: 'video', receivedAt: T0, marginMaxMs: 300_000 });
    expect(d).toMatchObject({ source: 'reference', issuedAt: T0, expiresAt: T0 + HOUR });
    expect(new Date(d.deadlineAt).toISOString()).toBe('2026-11-22T11:10:00.000Z');
  });

  it('still reads a far but valid expiry', () => {
    const url = 'https://h/a.png?X-Goog-Date=20261122T101500Z&X-Goog-Expires=999999999999';
    expect(urlExpiry(url)?.expiresAt).toBe(T0 + 999_999_999_999_000);
  });
});

describe('mediaDeadline', () => {
  it("takes the URL's own expiry and keeps a tenth of its lifetime as margin", () => {
    const url = 'https://h/a.mp3?X-Goog-Date=20261122T101500Z&X-Goog-Expires=3600';
    expect(
      mediaDeadline({ url, kind: 'audio', receivedAt: T0 + 5000, marginMaxMs: 600_000 }),
    ).toEqual({
      issuedAt: T0,
      expiresAt: T0 + HOUR,
      deadlineAt: T0 + HOUR - 360_000,
      source: 'gcs-v4',
    });
  });

  it('caps the margin', () => {
    const url = 'https://h/a.png?X-Goog-Date=20261122T101500Z&X-Goog-Expires=86400';
    const d = mediaDeadline({ url, kind: 'screenshot', receivedAt: T0, marginMaxMs: 300_000 });
    expect(d.expiresAt - d.deadlineAt).toBe(300_000);
  });

  it("falls back to the reference's lifetimes from when the response arrived", () => {
    const base = { url: 'https://cdn.example/x', receivedAt: T0, marginMaxMs: 300_000 };
    expect(mediaDeadline({ ...base, kind: 'screenshot' })).toMatchObject({
      issuedAt: T0,
      expiresAt: T0 + 24 * HOUR,
      deadlineAt: T0 + 24 * HOUR - 300_000,
      source: 'reference',
    });
    expect(mediaDeadline({ ...base, kind: 'audio' }).expiresAt).toBe(T0 + HOUR);
    expect(mediaDeadline({ ...base, kind: 'video' }).expiresAt).toBe(T0 + HOUR);
    expect(mediaDeadline({ ...base, kind: 'action-screenshot' }).expiresAt).toBe(T0 + 24 * HOUR);
    expect(mediaDeadline({ ...base, kind: 'action-pdf' }).expiresAt).toBe(T0 + HOUR);
  });

  it('an `Expires` URL counts its lifetime from the response; an expired one has its deadline past', () => {
    const url = `https://h/a?Expires=${(T0 + 100_000) / 1000}`;
    expect(mediaDeadline({ url, kind: 'video', receivedAt: T0, marginMaxMs: 1e9 })).toMatchObject({
      expiresAt: T0 + 100_000,
      deadlineAt: T0 + 90_000,
    });
    const old = `https://h/a?Expires=${(T0 - 1000) / 1000}`;
    const d = mediaDeadline({ url: old, kind: 'video', receivedAt: T0, marginMaxMs: 1e9 });
    expect(d.deadlineAt).toBe(T0 - 1000);
  });

  it('margin is a tenth of the lifetime, never negative', () => {
    expect(safetyMarginMs(3_600, 1e9)).toBe(360);
    expect(safetyMarginMs(-5, 1e9)).toBe(0);
    expect(safetyMarginMs(1e9, 5)).toBe(5);
  });
});
