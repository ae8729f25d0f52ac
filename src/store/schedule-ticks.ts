/**
 * `schedule_ticks`: what each tick of a pipeline's schedule did. A tick is keyed by its pipeline
 * and the time it was due, so a tick job redelivered after a crash finds its own row and goes on
 * with the run it planned, instead of starting a second one.
 *
 * | found when the tick is taken                          | claim     | recorded                |
 * |-------------------------------------------------------|-----------|-------------------------|
 * | this tick's row, `started`/`skipped`/`failed`         | `done`    | nothing (handled)       |
 * | this tick's row, `starting` (its worker died)         | `claimed` | nothing (same run id)   |
 * | its schedule is gone (`unscheduled`)                  | `skipped` | `skipped`, the reason   |
 * | a run of the pipeline queued, running or paused       | `skipped` | `skipped`, that run     |
 * | another tick of the pipeline `starting` (< 15 min)    | `skipped` | `skipped`, its run      |
 * | none of these                                         | `claimed` | `starting`, the new id  |
 */
import type { Database } from 'better-sqlite3';
import type { Clock } from './clock.ts';

export const TICK_OUTCOMES = ['starting', 'started', 'skipped', 'failed'] as const;
export type TickOutcome = (typeof TICK_OUTCOMES)[number];

/** A `starting` tick older than this no longer holds back the pipeline's next ticks, in ms. */
export const STALE_STARTING_MS = 15 * 60_000;

export interface TickRow {
  pipelineName: string;
  /** When the tick was due (its cron time), ms since the epoch. */
  dueAt: number;
  /** When a worker took it, ms since the epoch (later than `dueAt` when no worker was running). */
  takenAt: number;
  pipelineHash: string;
  outcome: TickOutcome;
  /** started/starting: the tick's run; skipped: the run that was still going. */
  runId: string | null;
  /** Why it was skipped or failed. */
  reason: string | null;
  updatedAt: number;
}

export type TickClaim =
  /** This worker starts (or, redelivered, goes on with) the run `tick.runId`. */
  | { kind: 'claimed'; tick: TickRow; redelivered: boolean }
  /** Recorded as skipped: the pipeline's previous run is still going, or it is unscheduled. */
  | { kind: 'skipped'; tick: TickRow }
  /** Handled before: a redelivered job. */
  | { kind: 'done'; tick: TickRow };

export interface ClaimInput {
  pipelineName: string;
  dueAt: number;
  pipelineHash: string;
  /** The id the run gets if this tick starts one. */
  runId: string;
  /**
   * Why the tick starts no run whatever else holds (its schedule was removed while it waited to
   * be tried again, say): a tick not yet handled is recorded as skipped with this reason.
   */
  unscheduled?: string;
}

export interface ScheduleTicksTable {
  /** Decides, in one immediate transaction, whether this tick starts a run (table above). */
  claim(input: ClaimInput): TickClaim;
  /** Ends a claimed tick: `started` (its run is enqueued) or `failed` with a reason. */
  finish(pipelineName: string, dueAt: number, outcome: 'started' | 'failed', reason?: string): void;
  get(pipelineName: string, dueAt: number): TickRow | undefined;
  /** The pipeline's ticks, newest first; default limit 20. */
  list(pipelineName: string, limit?: number): TickRow[];
}

const COLUMNS = `pipeline_name AS pipelineName, due_at AS dueAt, taken_at AS takenAt,
  pipeline_hash AS pipelineHash, outcome, run_id AS runId, reason, updated_at AS updatedAt`;

export function createScheduleTicksTable(db: Database, now: Clock): ScheduleTicksTable {
  const one = db.prepare<[string, number], TickRow>(
    `SELECT ${COLUMNS} FROM schedule_ticks WHERE pipeline_name = ? AND due_at = ?`,
  );
  const recent = db.prepare<[string, number], TickRow>(
    `SELECT ${COLUMNS} FROM schedule_ticks WHERE pipeline_name = ? ORDER BY due_at DESC LIMIT ?`,
  );
  const goingRun = db.prepare<[string], { id: string; status: string }>(
    `SELECT r.id, r.status FROM runs r JOIN pipelines p ON p.id = r.pipeline_id
     WHERE p.name = ? AND r.status IN ('queued', 'running', 'paused')
     ORDER BY r.created_at DESC LIMIT 1`,
  );
  const startingTick = db.prepare<[string, number], TickRow>(
    `SELECT ${COLUMNS} FROM schedule_ticks
     WHERE pipeline_name = ? AND outcome = 'starting' AND taken_at >= ?
     ORDER BY due_at DESC LIMIT 1`,
  );
  const insert = db.prepare<{
    name: string;
    dueAt: number;
    at: number;
    hash: string;
    outcome: TickOutcome;
    runId: string | null;
    reason: string | null;
  }>(
    `INSERT INTO schedule_ticks (pipeline_name, due_at, taken_at, pipeline_hash, outcome, run_id,
       reason, updated_at)
     VALUES (@name, @dueAt, @at, @hash, @outcome, @runId, @reason, @at)`,
  );
  const update = db.prepare<[TickOutcome, string | null, number, string, number]>(
    `UPDATE schedule_ticks SET outcome = ?, reason = ?, updated_at = ?
     WHERE pipeline_name = ? AND due_at = ? AND outcome = 'starting'`,
  );

  function whyBusy(name: string, at: number): { runId: string | null; reason: string } | null {
    const run = goingRun.get(name);
    if (run) return { runId: run.id, reason: `the previous run ${run.id} is still ${run.status}` };
    const tick = startingTick.get(name, at - STALE_STARTING_MS);
    if (tick) {
      const due = new Date(tick.dueAt).toISOString();
      return { runId: tick.runId, reason: `the tick due at ${due} is still starting its run` };
    }
    return null;
  }

  const claim = db.transaction((input: ClaimInput): TickClaim => {
    const { pipelineName: name, dueAt, pipelineHash: hash } = input;
    const existing = one.get(name, dueAt);
    if (existing) {
      return existing.outcome === 'starting'
        ? { kind: 'claimed', tick: existing, redelivered: true }
        : { kind: 'done', tick: existing };
    }
    const at = now();
    const busy = input.unscheduled ? { runId: null, reason: input.unscheduled } : whyBusy(name, at);
    const row = busy
      ? { outcome: 'skipped' as const, runId: busy.runId, reason: busy.reason }
      : { outcome: 'starting' as const, runId: input.runId, reason: null };
    insert.run({ name, dueAt, at, hash, ...row });
    const tick = one.get(name, dueAt) as TickRow;
    return busy ? { kind: 'skipped', tick } : { kind: 'claimed', tick, redelivered: false };
  });

  return {
    claim: (input) => claim.immediate(input),
    finish(name, dueAt, outcome, reason) {
      update.run(outcome, reason ?? null, now(), name, dueAt);
    },
    get: (name, dueAt) => one.get(name, dueAt),
    list: (name, limit = 20) => recent.all(name, limit),
  };
}
