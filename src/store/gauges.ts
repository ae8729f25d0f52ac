/** Figures the Prometheus metrics of a worker on the database host read from SQLite. */
import type { Database } from 'better-sqlite3';

export const MEDIA_STATUSES = ['pending', 'saved', 'failed', 'expired'] as const;
export type MediaStatus = (typeof MEDIA_STATUSES)[number];

export interface StoreGauges {
  /** Media rows of every run by status (all zero until media is saved). */
  mediaByStatus(): Record<MediaStatus, number>;
}

export function createStoreGauges(db: Database): StoreGauges {
  const byStatus = db.prepare<[], { status: MediaStatus; n: number }>(
    'SELECT status, COUNT(*) AS n FROM media GROUP BY status',
  );
  return {
    mediaByStatus() {
      const counts = Object.fromEntries(MEDIA_STATUSES.map((s) => [s, 0])) as Record<
        MediaStatus,
        number
      >;
      for (const { status, n } of byStatus.all()) counts[status] = n;
      return counts;
    },
  };
}
