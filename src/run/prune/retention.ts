/**
 * Pipelines' `retention`, applied after each of their scheduled runs: a tick records the rule
 * with the run it starts (retention_due, before the run can finish), and the runs role applies
 * the rules of runs that have finished, as `harvest prune` would. Each is applied once; one
 * that fails is recorded failed, said in the log, and not tried again (the next run's is).
 */
import type { Logger } from '../../log.ts';
import { parseDuration, type Retention } from '../../pipeline/index.ts';
import type { RetentionDue, Store } from '../../store/index.ts';
import { executePrune, type PruneOptions } from './execute.ts';
import { planPrune } from './plan.ts';
import type { RetentionRule } from './select.ts';

/** The row a scheduled run's retention is recorded as. */
export function retentionDue(
  runId: string,
  pipelineName: string,
  retention: Retention,
): RetentionDue {
  const maxAgeMs = retention.maxAge === undefined ? undefined : parseDuration(retention.maxAge);
  return { runId, pipelineName, keepRuns: retention.keepRuns ?? null, maxAgeMs: maxAgeMs ?? null };
}

function ruleOf(due: RetentionDue): RetentionRule | undefined {
  if (due.keepRuns !== null) return { keepRuns: due.keepRuns };
  if (due.maxAgeMs !== null) return { olderThanMs: due.maxAgeMs };
  return undefined;
}

/** Applies the retention of every finished scheduled run whose rule waits; returns how many. */
export async function applyDueRetentions(
  store: Store,
  options: PruneOptions & { logger: Logger; nowMs?: () => number },
): Promise<number> {
  const now = options.nowMs ?? Date.now;
  const due = store.prune.dueRetentions(10);
  for (const row of due) {
    const log = options.logger.child({ pipeline: row.pipelineName, runId: row.runId });
    const rule = ruleOf(row);
    try {
      if (!rule) throw new Error('the retention names no rule');
      const plan = planPrune(store, row.pipelineName, rule, now());
      const done = await executePrune(store, plan, options);
      const outcome = `pruned ${done.pruned.length} runs: ${done.results} results, ${done.calls} calls, ${done.files} media files`;
      store.prune.retentionApplied(row.runId, outcome, now());
      if (done.pruned.length > 0 || done.stopped.length > 0) {
        log.info(
          { pruned: done.pruned, stopped: done.stopped, database: done.database },
          'retention applied',
        );
      }
    } catch (error) {
      log.error({ err: error }, 'retention could not be applied');
      store.prune.retentionApplied(row.runId, `failed: ${(error as Error).message}`, now());
    }
  }
  return due.length;
}
