/** `harvest plan <file>`: the tasks a pipeline expands to and their credit estimate. No side effects. */
import { isDeepStrictEqual } from 'node:util';
import type { Command } from 'commander';
import { type NormalisedSearchRequest, withSearchDefaults } from '../../contract/defaults.ts';
import { HarvestError } from '../../errors.ts';
import {
  formatIssue,
  type Issue,
  loadPipelineFile,
  type PlanEstimate,
  planTasks,
  type Task,
} from '../../pipeline/index.ts';
import type { CommandContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { wholeNumber } from '../flags.ts';

export interface PlanReport {
  file: string;
  pipeline: string;
  taskCount: number;
  duplicates: number;
  /** The first `limit` tasks; the others are counted, not kept (a plan may have millions). */
  tasks: Task[];
  estimate: PlanEstimate;
  warnings: Issue[];
}

/**
 * Load, validate and plan one file, keeping its first `limit` tasks; throws
 * HarvestError(PIPELINE_INVALID) listing the issues: bad input to act on (exit 2), where
 * `validate`, the checker, exits 1.
 */
export async function planFile(file: string, limit: number): Promise<PlanReport> {
  const result = await loadPipelineFile(file);
  if (!result.ok) {
    const errors = result.issues.filter((issue) => issue.severity === 'error').length;
    throw new HarvestError(
      'PIPELINE_INVALID',
      `${file} is not a valid pipeline (${errors} error${errors === 1 ? '' : 's'}):\n${result.issues.map(formatIssue).join('\n')}`,
      { exitCode: EXIT.BAD_INPUT },
    );
  }
  const stream = planTasks(result.value);
  const tasks: Task[] = [];
  for (const task of stream) if (tasks.length < limit) tasks.push(task);
  return {
    file,
    pipeline: stream.pipeline,
    taskCount: stream.taskCount,
    duplicates: stream.duplicates,
    tasks,
    estimate: stream.estimate(),
    warnings: result.warnings,
  };
}

const VERDICT_TEXT = {
  within: 'within budget',
  'may-exceed': 'may exceed the budget',
  exceeds: 'exceeds the budget',
  'no-budget': 'no budget set',
} as const;

export function renderPlan(report: PlanReport): string {
  const result = report;
  const lines = report.warnings.map(formatIssue);
  const shown = result.tasks;
  lines.push(
    `${result.pipeline}: ${result.taskCount} task${result.taskCount === 1 ? '' : 's'}` +
      (result.duplicates > 0
        ? ` (${result.duplicates} duplicate${result.duplicates === 1 ? '' : 's'} dropped)`
        : ''),
  );
  for (const task of shown) {
    const label = task.searchId ?? '-';
    const formats = task.request.scrapeOptions?.formats.map((f) => f.type).join(',') ?? '';
    const extras = requestExtras(task.request);
    lines.push(
      `  ${task.key}  ${label.padEnd(16)} ${JSON.stringify(task.request.query)} limit=${task.request.limit}` +
        `${extras ? ` ${extras}` : ''}${formats ? ` formats=${formats}` : ''}  credits ${task.credits.min}..${task.credits.max}`,
    );
  }
  if (result.taskCount > shown.length) lines.push(`  … ${result.taskCount - shown.length} more`);
  const { estimate } = result;
  lines.push(`credits: ${estimate.minCredits}..${estimate.maxCredits}`);
  lines.push(
    estimate.budgetCredits === undefined
      ? `budget: ${VERDICT_TEXT[estimate.verdict]}`
      : `budget: ${estimate.budgetCredits} credits, ${VERDICT_TEXT[estimate.verdict]}`,
  );
  return lines.join('\n');
}

/** The search defaults (withSearchDefaults of a bare query): fields equal to them are not shown. */
const SEARCH_DEFAULTS: Readonly<Record<string, unknown>> = { ...withSearchDefaults({ query: '' }) };
const SHOWN_ELSEWHERE = new Set(['query', 'limit', 'scrapeOptions']);

/**
 * A task's request fields that differ from the search defaults, as `key=value` (sources and
 * categories by their types when that is all they say), so that tasks of one query that differ
 * elsewhere (a source, a location) read differently. Scrape options show as their formats.
 */
export function requestExtras(request: NormalisedSearchRequest): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(request)) {
    if (SHOWN_ELSEWHERE.has(key) || value === undefined) continue;
    if (isDeepStrictEqual(value, SEARCH_DEFAULTS[key])) continue;
    parts.push(`${key}=${compact(value)}`);
  }
  return parts.join(' ');
}

function compact(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) ? JSON.stringify(value) : value;
  const typesOnly =
    Array.isArray(value) &&
    value.every(
      (v) => typeof v === 'object' && v !== null && Object.keys(v).length === 1 && 'type' in v,
    );
  if (typesOnly) return (value as { type: string }[]).map((v) => v.type).join(',') || '[]';
  return JSON.stringify(value);
}

export function registerPlan(program: Command, _ctx: CommandContext): void {
  program
    .command('plan')
    .description('Show the tasks a pipeline expands to and its credit estimate (no network).')
    .argument('<file>', 'pipeline file')
    .option('--json', 'print JSON')
    .option('--limit <n>', 'tasks to list', wholeNumber, 20)
    .addHelpText(
      'after',
      '\nExamples:\n  harvest plan pipelines/bulk-dataset.yaml --limit 5\n  harvest plan news.yaml --json | jq .estimate',
    )
    .action(async (file: string, options: { json?: boolean; limit: number }) => {
      const report = await planFile(file, options.limit);
      if (options.json) {
        console.log(
          JSON.stringify(
            {
              file: report.file,
              pipeline: report.pipeline,
              taskCount: report.taskCount,
              duplicates: report.duplicates,
              tasks: report.tasks,
              estimate: report.estimate,
              warnings: report.warnings,
            },
            null,
            2,
          ),
        );
      } else {
        console.log(renderPlan(report));
      }
    });
}
