/** Figures the Prometheus metrics of a worker on the database host read from SQLite. */
import type { Database } from 'better-sqlite3';

export const MEDIA_STATUSES = ['pending', 'saved', 'failed', 'expired'] as const;
export type MediaStatus = (typeof MEDIA_STATUSES)[number];

export interface StoreGauges {
  /** Media rows of every run by status (all zero until media is saved). */
  mediaByStatus(): Record<MediaStatus, number>;
}

export function createStoreGauges(db: Database): StoreGauges {
  // From the counts each run keeps by triggers (run_media): one row a run, where counting the
  // media rows read every one of them at every scrape, on the thread that downloads.
  const byStatus = db.prepare<[], Record<MediaStatus, number | null>>(
    `SELECT SUM(pending) AS pending, SUM(saved) AS saved, SUM(failed) AS failed,
            SUM(expired) AS expired FROM run_media`,
  );
  return {
    mediaByStatus() {
      const sums = byStatus.get();
      return Object.fromEntries(MEDIA_STATUSES.map((s) => [s, sums?.[s] ?? 0])) as Record<
        MediaStatus,
        number
      >;
    },
  };
}
