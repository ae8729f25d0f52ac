/** The harvest SQLite store: the only module that speaks SQL. */

export * from '../events/store.ts';
export type { StoredFileRef } from '../media/verify.ts';
export type { ApplyEvents, ApplyReport, RejectedEvent } from './apply-events.ts';
export type { CallError, CallSummary, CallsTable, CallTotals } from './calls.ts';
export * from './changes/index.ts';
export type { Clock } from './clock.ts';
export { type MigrationStep, type OpenStoreOptions, openStore, type Store } from './db.ts';
export type {
  FreshUrl,
  MediaConfig,
  MediaRow,
  MediaStatus,
  MediaTable,
  SavedFile,
} from './media.ts';
export { MEDIA_STATUSES } from './media.ts';
export { SCHEMA_VERSION } from './migrations.ts';
export {
  type AttemptInput,
  NOTIFICATION_STATES,
  type NotificationAttempt,
  type NotificationRow,
  type NotificationState,
  type NotificationsTable,
} from './notifications.ts';
export type { PipelineInput, PipelineRow, PipelinesTable } from './pipelines.ts';
export type {
  MediaFileRef,
  MovedBatch,
  PipelineRunRow,
  PruneTable,
  RetentionDue,
  RunFootprint,
} from './prune.ts';
export {
  COST_GROUPS,
  type CostFigures,
  type CostGroup,
  type CostGroupRow,
  type CostQuery,
  type CostReports,
  NO_COSTS,
  type RunCostInfo,
} from './queries/cost-report.ts';
export type {
  BuildOptions,
  ExportFilter,
  ExportKey,
  ExportPages,
  ExportQuery,
  ExportReader,
  ExportRow,
  PageBounds,
  SinceRun,
} from './queries/export.ts';
export { buildExportQuery, LONG_TEXT_COLUMNS, SCAN_CACHE_KIB } from './queries/export.ts';
export * from './queries/export-columns.ts';
export type { StoreGauges } from './queries/gauges.ts';
export type {
  MediaCounts,
  MediaFailure,
  MediaReports,
  MediaSummary,
} from './queries/media-report.ts';
export type {
  CreditsByRunOptions,
  CreditTotals,
  DayCredits,
  PipelineCredits,
  Reports,
  RunCredits,
  TimeRange,
} from './queries/reports.ts';
export type { RunStatusFn, RunStatusOptions, RunStatusReport } from './queries/status.ts';
export type { ResultFilter, ResultRow, ResultsApplied, ResultsTable } from './results.ts';
export type { RunEstimate, RunEstimatesTable } from './run-estimates.ts';
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
export {
  type ClaimInput,
  type ScheduleTicksTable,
  TICK_OUTCOMES,
  type TickClaim,
  type TickOutcome,
  type TickRow,
} from './schedule-ticks.ts';
export type { SeenUrlRow, SeenUrlsTable } from './seen-urls.ts';
export type {
  TaskCounts,
  TaskInput,
  TaskRow,
  TasksTable,
  UnfinishedOptions,
  UnfinishedTask,
} from './tasks.ts';
export { directWriter, type EventWriter, type WriteOptions } from './writer/commit.ts';
