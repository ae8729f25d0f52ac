/**
 * Pipeline files: load and validate (with positions), then plan (pure).
 *
 * Terminology: a pipeline is one YAML file; a search item is one entry of `searches`; a task is
 * one distinct search request after matrix expansion and defaults.
 */

export { DURATION_FORMAT, parseDuration } from './duration.ts';
export {
  type BudgetVerdict,
  budgetVerdict,
  estimateTaskRowsBytes,
  type PlanEstimate,
} from './estimate.ts';
export {
  type ExpandedSearch,
  expandSearches,
  matrixSize,
  mergeItem,
} from './expand.ts';
export { MAX_ISSUES_PER_FILE } from './finding-set.ts';
export {
  describeValue,
  didYouMean,
  editDistance,
  type Finding,
  formatIssue,
  type Issue,
  type IssueSeverity,
  type Path,
  pathToString,
} from './issues.ts';
export { canonicalJson, hashCanonical, TASK_KEY_HEX_CHARS, taskKey } from './keys.ts';
export { MAX_NESTING, MAX_PIPELINE_BYTES } from './load.ts';
export { MEDIA_OPTIONS, type MediaOption } from './media-rules.ts';
export { type Plan, plan, planTasks, type Task, type TaskStream } from './plan.ts';
export { MAX_EXPANDED_SEARCHES } from './rules.ts';
export {
  type Defaults,
  DefaultsSchema,
  MEDIA_MAX_BYTES_DEFAULT,
  type Pipeline,
  PipelineSchema,
  PLAN_RATE_LIMITS_PER_MINUTE,
  pipelineJsonSchema,
  REQUEST_FIELDS,
  type Retention,
  type SearchItem,
  SearchItemSchema,
} from './schema.ts';
export {
  type CheckSummary,
  loadPipelineFile,
  type PipelineStats,
  parsePipeline,
  parsePipelineBytes,
  type ValidateOptions,
  type ValidationResult,
} from './validate.ts';
