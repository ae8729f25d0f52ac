import { describe, expect, it } from 'vitest';
import { matchFresh, mediaOfItem } from '../../../src/media/collect.ts';
import type { MediaKind } from '../../../src/media/kinds.ts';

const ALL = new Set<MediaKind>(['screenshot', 'audio', 'video', 'action-screenshot', 'action-pdf']);

describe('mediaOfItem', () => {
  const item = {
    url: 'https://a.example/p',
    screenshot: 'https://m/s.png',
    audio: 'https://m/a.mp3',
    video: null,
    actions: {
      screenshots: ['https://m/a0.png', 'https://m/a1.png'],
      pdfs: [{ url: 'https://m/p0.pdf' }, 42],
    },
  };

  it('lists the media fields and action outputs of the wanted kinds', () => {
    expect(mediaOfItem(item, ALL)).toEqual([
      { kind: 'screenshot', itemIndex: 0, url: 'https://m/s.png' },
      { kind: 'audio', itemIndex: 0, url: 'https://m/a.mp3' },
      { kind: 'action-screenshot', itemIndex: 0, url: 'https://m/a0.png' },
      { kind: 'action-screenshot', itemIndex: 1, url: 'https://m/a1.png' },
      { kind: 'action-pdf', itemIndex: 0, url: 'https://m/p0.pdf' },
    ]);
    expect(mediaOfItem(item, new Set(['audio']))).toEqual([
      { kind: 'audio', itemIndex: 0, url: 'https://m/a.mp3' },
    ]);
    expect(mediaOfItem({ url: 'x', screenshot: '' }, ALL)).toEqual([]);
  });
});

describe('matchFresh', () => {
  const data = {
    web: [
      { url: 'https://a.example/1', audio: 'https://m/new-1.mp3' },
      { url: 'https://a.example/2', screenshot: 'https://m/new-2.png' },
    ],
    news: [{ url: 'https://n.example/1', audio: 'https://m/news.mp3' }],
  };

  it('finds the result by its url, whatever its position, then the media by kind and index', () => {
    expect(
      matchFresh(data, {
        source: 'web',
        kind: 'audio',
        itemIndex: 0,
        resultUrl: 'https://a.example/1',
      }),
    ).toEqual({ found: true, url: 'https://m/new-1.mp3' });
    expect(
      matchFresh(data, {
        source: 'web',
        kind: 'audio',
        itemIndex: 0,
        resultUrl: 'https://n.example/1',
      }),
    ).toEqual({ found: true, url: 'https://m/news.mp3' });
  });

  it('says why when the result or its media is gone', () => {
    expect(
      matchFresh(data, {
        source: 'web',
        kind: 'audio',
        itemIndex: 0,
        resultUrl: 'https://gone.example/',
      }),
    ).toEqual({
      found: false,
      reason: 'RESULT_GONE',
      message: 'the re-issued search no longer returns https://gone.example/',
    });
    expect(
      matchFresh(data, {
        source: 'web',
        kind: 'video',
        itemIndex: 0,
        resultUrl: 'https://a.example/2',
      }),
    ).toMatchObject({ found: false, reason: 'MEDIA_GONE' });
    expect(
      matchFresh(data, { source: 'web', kind: 'video', itemIndex: 0, resultUrl: null }),
    ).toMatchObject({ found: false, reason: 'RESULT_GONE' });
  });

  it('takes the occurrence of a url that carries the media, its own source first', () => {
    const media = {
      source: 'web',
      kind: 'screenshot' as const,
      itemIndex: 0,
      resultUrl: 'https://r/x',
    };
    // The first occurrence's scrape failed; the second carries a screenshot.
    const twice = {
      web: [
        { url: 'https://r/x', metadata: { statusCode: 500, error: 'scrape failed' } },
        { url: 'https://r/x', screenshot: 'https://m/second.png' },
      ],
    };
    expect(matchFresh(twice, media)).toEqual({ found: true, url: 'https://m/second.png' });
    // Its own source has it without the screenshot; another source has it with one.
    const elsewhere = {
      news: [{ url: 'https://r/x', screenshot: 'https://m/news.png' }],
      web: [{ url: 'https://r/x' }],
    };
    expect(matchFresh(elsewhere, media)).toEqual({ found: true, url: 'https://m/news.png' });
    // Both carry one: its own source wins, wherever it sits in the answer.
    const both = {
      news: [{ url: 'https://r/x', screenshot: 'https://m/news.png' }],
      web: [{ url: 'https://r/x', screenshot: 'https://m/web.png' }],
    };
    expect(matchFresh(both, media)).toEqual({ found: true, url: 'https://m/web.png' });
  });
});
