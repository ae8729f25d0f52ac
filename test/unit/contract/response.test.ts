import { describe, expect, it } from 'vitest';
import { MEDIA_LIFETIME_MS, resultsOf, SearchResponseSchema } from '../../../src/contract/index.ts';

const response = {
  success: true,
  data: {
    web: [
      {
        url: 'https://a.com',
        title: 'A',
        description: 'd',
        category: 'github',
        markdown: '# A',
        html: null,
        links: ['https://b.com'],
        screenshot: 'https://storage.example/s.png?X-Goog-Expires=86400',
        answer: 'yes',
        highlights: ['x'],
        metadata: {
          title: 'A',
          sourceURL: 'https://a.com',
          url: 'https://a.com/',
          statusCode: 200,
          numPages: 3,
          totalPages: 10,
          error: null,
          creditsUsed: 1,
          ogImage: 'kept',
        },
        futureField: 1,
      },
    ],
    news: [{ title: 'N', snippet: 's', url: 'https://n.com', date: '1 day ago', position: 1 }],
    images: [
      {
        title: 'I',
        imageUrl: 'https://i.com/x.png',
        imageWidth: 10,
        imageHeight: 20,
        url: 'https://i.com',
        position: 1,
      },
    ],
  },
  creditsUsed: 7,
  id: '01890a5d-ac96-774b-bcce-b302099a8057',
  warning: null,
};

describe('SearchResponseSchema', () => {
  it('parses a full response and keeps unknown keys', () => {
    const parsed = SearchResponseSchema.parse(response);
    expect(parsed.data.web?.[0]?.futureField).toBe(1);
    expect(parsed.data.web?.[0]?.metadata?.ogImage).toBe('kept');
    expect(resultsOf(parsed).map((r) => r.source)).toEqual(['web', 'news', 'images']);
  });

  it('accepts empty data and a missing warning', () => {
    expect(
      SearchResponseSchema.safeParse({ success: true, data: {}, creditsUsed: 0, id: 'x' }).success,
    ).toBe(true);
  });

  it('rejects a body without creditsUsed or id, or with success false', () => {
    const { creditsUsed: _c, ...noCredits } = response;
    const { id: _i, ...noId } = response;
    expect(SearchResponseSchema.safeParse(noCredits).success).toBe(false);
    expect(SearchResponseSchema.safeParse(noId).success).toBe(false);
    expect(SearchResponseSchema.safeParse({ ...response, success: false }).success).toBe(false);
    expect(SearchResponseSchema.safeParse({ ...response, creditsUsed: 1.5 }).success).toBe(false);
  });

  it('documents media lifetimes', () => {
    expect(MEDIA_LIFETIME_MS).toEqual({
      screenshot: 86_400_000,
      audio: 3_600_000,
      video: 3_600_000,
    });
  });
});
