/** How media is shown to humans: in `harvest status RUN`, the run summary and `harvest media`. */
import type { MediaSummary } from '../store/index.ts';

/** `in 42 s`, `3 min ago`: a deadline relative to now. */
export function relativeTime(atMs: number, nowMs: number): string {
  const delta = atMs - nowMs;
  const abs = Math.abs(delta);
  const text =
    abs < 60_000
      ? `${Math.round(abs / 1000)} s`
      : abs < 3_600_000
        ? `${Math.round(abs / 60_000)} min`
        : `${(abs / 3_600_000).toFixed(1)} h`;
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}

/** `saved 10/12 (pending 1, failed 1), oldest pending due in 42 s (2026-11-22T10:15:00.000Z)` */
export function formatMediaSummary(m: MediaSummary, nowMs: number): string {
  const rest = [
    m.pending ? `pending ${m.pending}` : '',
    m.failed ? `failed ${m.failed}` : '',
    m.expired ? `expired ${m.expired}` : '',
  ].filter(Boolean);
  const due =
    m.oldestPendingDeadlineAt === null
      ? ''
      : `, oldest pending due ${relativeTime(m.oldestPendingDeadlineAt, nowMs)} (${new Date(m.oldestPendingDeadlineAt).toISOString()})`;
  return `saved ${m.saved}/${m.requested}${rest.length ? ` (${rest.join(', ')})` : ''}${due}`;
}
