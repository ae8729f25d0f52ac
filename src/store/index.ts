/** The harvest SQLite store: the only module that speaks SQL. */
export type { ApplyEvents, ApplyReport, RejectedEvent } from './apply-events.ts';
export type { CallError, CallSummary, CallsTable, CallTotals } from './calls.ts';
export type { Clock } from './clock.ts';
export { commitEvents, directWriter, type EventWriter } from './commit.ts';
export { type OpenStoreOptions, openStore, type Store } from './db.ts';
export * from './events.ts';
export { SCHEMA_VERSION } from './migrations.ts';
export type { PipelineInput, PipelineRow, PipelinesTable } from './pipelines.ts';
export type {
  CreditsByRunOptions,
  CreditTotals,
  DayCredits,
  PipelineCredits,
  Reports,
  RunCredits,
  TimeRange,
} from './reports.ts';
export type { ResultFilter, ResultRow, ResultsApplied, ResultsTable } from './results.ts';
export {
  FINISHED_RUN_STATUSES,
  RUN_STATUSES,
  RUN_TRIGGERS,
  type RunInput,
  type RunListOptions,
  type RunRow,
  type RunStatus,
  type RunsTable,
  type RunTrigger,
  type SetStatusOptions,
} from './runs.ts';
export type { SeenUrlRow, SeenUrlsTable } from './seen-urls.ts';
export type { RunStatusFn, RunStatusOptions, RunStatusReport } from './status.ts';
export type {
  TaskCounts,
  TaskInput,
  TaskRow,
  TasksTable,
  UnfinishedOptions,
  UnfinishedTask,
} from './tasks.ts';
