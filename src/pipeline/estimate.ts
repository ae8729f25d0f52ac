/**
 * Credit estimate of a plan: bounds per task from the contract's credit rules, summed, and
 * compared with the pipeline's budget. And the size of the task rows a run writes.
 */
import {
  type CreditEstimate,
  estimateSearchCredits,
  type SearchRequest,
} from '../contract/index.ts';

/** How the estimate compares with `budget.maxCredits`. */
export type BudgetVerdict =
  /** Even the maximum fits the budget. */
  | 'within'
  /** The minimum fits, the maximum does not: the runner may stop before the end. */
  | 'may-exceed'
  /** Even the minimum is over the budget. */
  | 'exceeds'
  /** The pipeline sets no budget. */
  | 'no-budget';

export interface PlanEstimate {
  /** Tasks counted. */
  tasks: number;
  /** Fewest credits the tasks can cost in total (every search finds nothing). */
  minCredits: number;
  /** Most credits the tasks can cost in total (every source returns `limit` results, all scraped). */
  maxCredits: number;
  /** `budget.maxCredits` of the pipeline, when set. */
  budgetCredits?: number;
  verdict: BudgetVerdict;
}

/** Bounds of one search's cost (the contract's rule). */
export function estimateTaskCredits(request: SearchRequest): CreditEstimate {
  return estimateSearchCredits(request);
}

export function budgetVerdict(
  minCredits: number,
  maxCredits: number,
  budgetCredits: number | undefined,
): BudgetVerdict {
  if (budgetCredits === undefined) return 'no-budget';
  if (maxCredits <= budgetCredits) return 'within';
  if (minCredits > budgetCredits) return 'exceeds';
  return 'may-exceed';
}

/** The estimate of `tasks` tasks whose bounds sum to `minCredits`..`maxCredits`. */
export function estimateFromTotals(
  tasks: number,
  minCredits: number,
  maxCredits: number,
  budgetCredits: number | undefined,
): PlanEstimate {
  const estimate: PlanEstimate = {
    tasks,
    minCredits,
    maxCredits,
    verdict: budgetVerdict(minCredits, maxCredits, budgetCredits),
  };
  if (budgetCredits !== undefined) estimate.budgetCredits = budgetCredits;
  return estimate;
}

const TASK_ROW_BYTES_PER_TEXT_CHAR = 1.5;
const TASK_ROW_FIXED_BYTES = 90;

/**
 * Bytes a run's task rows take in SQLite (the `tasks` table, src/store/migrations.ts), from the
 * mean characters of a row's text: the request's JSON, the search id and the tags' JSON. Task
 * keys are hashes, so rows arrive in random key order and the table's pages end about two
 * thirds full (TASK_ROW_BYTES_PER_TEXT_CHAR); each row also holds its run id, key, status,
 * counters and times, and an entry in the status index (TASK_ROW_FIXED_BYTES).
 */
export function estimateTaskRowsBytes(tasks: number, meanTextChars: number): number {
  return Math.round(tasks * (meanTextChars * TASK_ROW_BYTES_PER_TEXT_CHAR + TASK_ROW_FIXED_BYTES));
}
