/**
 * Credit estimate of a plan: bounds per task from the contract's credit rules, summed, and
 * compared with the pipeline's budget.
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

/** Sum per-task bounds and compare with the budget. */
export function summariseEstimate(
  perTask: readonly CreditEstimate[],
  budgetCredits: number | undefined,
): PlanEstimate {
  let minCredits = 0;
  let maxCredits = 0;
  for (const credits of perTask) {
    minCredits += credits.min;
    maxCredits += credits.max;
  }
  const estimate: PlanEstimate = {
    tasks: perTask.length,
    minCredits,
    maxCredits,
    verdict: budgetVerdict(minCredits, maxCredits, budgetCredits),
  };
  if (budgetCredits !== undefined) estimate.budgetCredits = budgetCredits;
  return estimate;
}
