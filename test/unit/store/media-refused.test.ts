/**
 * Media events the database refuses (they fail validation: a bug of harvest's, which no retry
 * mends) end their rows `failed` with the reason, instead of leaving them pending for good.
 */
import { describe, expect, it } from 'vitest';
import { recordMediaEvents } from '../../../jobs/media/role.ts';
import { endingsForRefused } from '../../../src/events/media.ts';
import { createLogger } from '../../../src/log.ts';
import { directWriter } from '../../../src/store/index.ts';
import { resultsEvent, seedRun, useTempStores, webItem } from './helpers.ts';

const T0 = Date.UTC(2026, 10, 22, 10, 15, 0);
const audio = (n: number) =>
  `https://media.example/a${n}.mp3?X-Goog-Date=20261122T101500Z&X-Goog-Expires=3600&X-Goog-Signature=ab`;

describe('media events the database refuses', () => {
  const stores = useTempStores();

  it('end their rows failed, with what was wrong; the valid events of the batch apply', async () => {
    const store = stores.open({ now: () => T0 + 5000 });
    const { runId } = seedRun(store);
    store.media.configure({
      runId,
      kinds: ['audio'],
      dir: 'media',
      maxBytes: 1000,
      marginMaxMs: 0,
    });
    store.applyEvents([
      resultsEvent(runId, 't0', [webItem(1, { audio: audio(1) }), webItem(2, { audio: audio(2) })]),
    ]);
    const [bad, good] = store.media.pendingOfTask(runId, 't0');
    const saved = (mediaId: number, sha256: string) => ({
      type: 'media-saved' as const,
      mediaId,
      sourceUrl: audio(mediaId === bad!.id ? 1 : 2),
      resultUrl: null,
      sha256,
      path: `media/${sha256.slice(0, 2)}/${sha256}.mp3`,
      bytes: 10,
      contentType: 'audio/mpeg',
      at: T0 + 6000,
    });
    await recordMediaEvents(
      directWriter(store),
      [saved(bad!.id, 'not-a-hash'), saved(good!.id, 'a'.repeat(64))],
      createLogger({ level: 'silent' }),
    );
    expect(store.media.get(good!.id)?.status).toBe('saved');
    expect(store.media.get(bad!.id)).toMatchObject({
      status: 'failed',
      errorCode: 'MEDIA_EVENT_REFUSED',
      errorMessage: expect.stringMatching(/media-saved event: sha256: /),
    });
  });

  it('leave rows only marked as queued alone, and end a row once', () => {
    const events = [
      { type: 'media-queued', mediaIds: [1, 0] },
      { type: 'media-refreshed', mediaId: 2, sourceUrl: '' },
      { type: 'media-retry', mediaId: 2, at: -1 },
      { type: 'media-saved', mediaId: 'x' },
    ];
    const refused = events.map((_, index) => ({ index, issues: ['wrong'] }));
    expect(endingsForRefused(events, refused, 7)).toEqual([
      {
        type: 'media-ended',
        mediaId: 2,
        status: 'failed',
        code: 'MEDIA_EVENT_REFUSED',
        message: 'harvest could not record its media-refreshed event: wrong',
        attempted: false,
        at: 7,
      },
    ]);
  });
});
