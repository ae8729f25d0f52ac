/**
 * `notifications`: the webhook of a scheduled run and each attempt to deliver it. The row is
 * written when the run starts, so the duty to notify is in SQLite before the run can finish;
 * whoever looks (the runs role, every few seconds) finds the finished runs whose notification is
 * still pending, whatever process died in between.
 */
import type { Database } from 'better-sqlite3';
import { clip } from './calls.ts';
import type { Clock } from './clock.ts';

export const NOTIFICATION_STATES = ['pending', 'delivered', 'failed'] as const;
export type NotificationState = (typeof NOTIFICATION_STATES)[number];

export interface NotificationRow {
  runId: string;
  url: string;
  state: NotificationState;
  /** Delivery attempts made so far. */
  attempts: number;
  /** HTTP status of the last attempt; null when no answer came. */
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  deliveredAt: number | null;
}

export interface NotificationAttempt {
  runId: string;
  /** From 1, counted over the notification's life (not per queue job). */
  attempt: number;
  /** When it was sent, ms since the epoch. */
  at: number;
  durationMs: number;
  status: number | null;
  error: string | null;
}

export interface AttemptInput {
  runId: string;
  at: number;
  durationMs: number;
  status: number | null;
  error: string | null;
  /** What the attempt leaves: delivered, pending (tried again later) or failed (given up). */
  state: NotificationState;
}

export interface NotificationsTable {
  /** The run notifies `url` once finished; an existing row is kept as it is. */
  ensure(runId: string, url: string): void;
  get(runId: string): NotificationRow | undefined;
  /**
   * Run ids whose notification is pending and whose run has finished, oldest first; after the
   * run id `after` when given (the last of the page before).
   */
  due(limit?: number, after?: string): string[];
  /** Records one delivery attempt and the state it leaves; returns its number. */
  recordAttempt(input: AttemptInput): number;
  attempts(runId: string): NotificationAttempt[];
}

const COLUMNS = `run_id AS runId, url, state, attempts, last_status AS lastStatus,
  last_error AS lastError, created_at AS createdAt, updated_at AS updatedAt,
  delivered_at AS deliveredAt`;

export function createNotificationsTable(db: Database, now: Clock): NotificationsTable {
  const insert = db.prepare<[string, string, number, number]>(
    `INSERT OR IGNORE INTO notifications (run_id, url, state, created_at, updated_at)
     VALUES (?, ?, 'pending', ?, ?)`,
  );
  const one = db.prepare<[string], NotificationRow>(
    `SELECT ${COLUMNS} FROM notifications WHERE run_id = ?`,
  );
  // Keyset paging, oldest first: a caller skips those it has in hand already and reads on.
  const due = db
    .prepare<[number, string, number], string>(
      `SELECT n.run_id FROM notifications n JOIN runs r ON r.id = n.run_id
       WHERE n.state = 'pending' AND r.status IN ('completed', 'failed', 'cancelled')
         AND (n.created_at, n.run_id) > (?, ?)
       ORDER BY n.created_at, n.run_id LIMIT ?`,
    )
    .pluck();
  const createdAtOf = db
    .prepare<[string], number>('SELECT created_at FROM notifications WHERE run_id = ?')
    .pluck();
  const bump = db.prepare<{
    runId: string;
    state: NotificationState;
    status: number | null;
    error: string | null;
    at: number;
  }>(
    `UPDATE notifications SET attempts = attempts + 1, state = @state, last_status = @status,
       last_error = @error, updated_at = @at,
       delivered_at = CASE WHEN @state = 'delivered' THEN @at ELSE delivered_at END
     WHERE run_id = @runId
     RETURNING attempts`,
  );
  const insertAttempt = db.prepare<[string, number, number, number, number | null, string | null]>(
    `INSERT INTO notification_attempts (run_id, attempt, at, duration_ms, status, error)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const attempts = db.prepare<[string], NotificationAttempt>(
    `SELECT run_id AS runId, attempt, at, duration_ms AS durationMs, status, error
     FROM notification_attempts WHERE run_id = ? ORDER BY attempt`,
  );

  const record = db.transaction((input: AttemptInput): number => {
    const error = clip(input.error);
    const row = bump.get({
      runId: input.runId,
      state: input.state,
      status: input.status,
      error,
      at: now(),
    }) as { attempts: number } | undefined;
    if (!row) throw new Error(`no notification for run ${input.runId}`);
    const duration = Math.round(input.durationMs);
    insertAttempt.run(input.runId, row.attempts, input.at, duration, input.status, error);
    return row.attempts;
  });

  return {
    ensure(runId, url) {
      const at = now();
      insert.run(runId, url, at, at);
    },
    get: (runId) => one.get(runId),
    due: (limit = 100, after) => {
      const at = after === undefined ? -1 : (createdAtOf.get(after) ?? -1);
      return due.all(at, after ?? '', limit);
    },
    recordAttempt: (input) => record.immediate(input),
    attempts: (runId) => attempts.all(runId),
  };
}
