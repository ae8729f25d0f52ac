/**
 * Which runs of a pipeline a retention rule removes (pure). Runs are counted and aged whatever
 * their status, newest first; of the runs beyond the rule, only finished ones (completed, failed,
 * cancelled) are pruned: a run still queued, running, paused or interrupted may go on, and is
 * left whole, as is one that still saves media.
 *
 * | rule          | keeps                                           |
 * |---------------|-------------------------------------------------|
 * | `keepRuns: N` | the N most recent runs                          |
 * | `olderThanMs` | runs created less than this long before `nowMs` |
 */
import { FINISHED_RUN_STATUSES, type PipelineRunRow } from '../../store/index.ts';

export type RetentionRule = { keepRuns: number } | { olderThanMs: number };

export interface SkippedRun {
  runId: string;
  status: string;
  reason: string;
}

export interface RunSelection {
  /** Runs the rule removes, newest first. */
  prune: PipelineRunRow[];
  /** Runs the rule would remove that are not finished. */
  skipped: SkippedRun[];
  /** Runs the rule keeps. */
  kept: number;
}

export function selectRuns(
  runs: readonly PipelineRunRow[],
  rule: RetentionRule,
  nowMs: number,
): RunSelection {
  const beyond =
    'keepRuns' in rule
      ? runs.slice(rule.keepRuns)
      : runs.filter((r) => r.createdAt < nowMs - rule.olderThanMs);
  const prune: PipelineRunRow[] = [];
  const skipped: SkippedRun[] = [];
  for (const run of beyond) {
    if ((FINISHED_RUN_STATUSES as readonly string[]).includes(run.status)) prune.push(run);
    else
      skipped.push({
        runId: run.runId,
        status: run.status,
        reason: `not finished (${run.status})`,
      });
  }
  return { prune, skipped, kept: runs.length - beyond.length };
}

/** How a rule reads in messages: `keep 3 runs`, `older than 30d`. */
export function describeRule(rule: RetentionRule, written?: string): string {
  if ('keepRuns' in rule)
    return `keep the ${rule.keepRuns} most recent run${rule.keepRuns === 1 ? '' : 's'}`;
  return `runs older than ${written ?? `${Math.round(rule.olderThanMs / 60_000)}m`}`;
}
