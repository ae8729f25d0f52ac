/**
 * `harvest validate <file|dir>...`: check pipeline files; exit 1 when any has an error. A file
 * that expands to more than VALIDATE_EACH_UP_TO searches is checked by sample; on a terminal,
 * a check that takes longer than a second shows how far it is.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import {
  type CheckSummary,
  estimateTaskRowsBytes,
  formatIssue,
  type Issue,
  loadPipelineFile,
  type PipelineStats,
} from '../../pipeline/index.ts';
import type { CommandContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';

export interface FileReport {
  file: string;
  ok: boolean;
  issues: Issue[];
  stats?: PipelineStats;
  /** How the searches were checked (valid files). */
  check?: CheckSummary;
  /** Estimated bytes of the task rows a run of the file writes to SQLite (valid files). */
  taskRowsBytes?: number;
}

/** Files that expand to more searches are checked by sample, not search by search. */
export const VALIDATE_EACH_UP_TO = 100_000;
/** A run writing task rows of this size or more has it said beside the file's `ok`. */
const SHOW_SIZE_FROM_BYTES = 100 * 1024 ** 2;

const PIPELINE_EXTENSIONS = /\.ya?ml$/i;

/** The pipeline files named by the arguments: files as given, directories' *.yaml|*.yml (sorted). */
export async function resolvePipelinePaths(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const path of paths) {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(path);
    } catch {
      throw new UsageError(`no such file or directory: ${path}`);
    }
    if (!info.isDirectory()) {
      files.push(path);
      continue;
    }
    let entries: string[];
    try {
      entries = await readdir(path);
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new UsageError(`cannot list directory ${path} (${reason})`);
    }
    const names = entries.filter((name) => PIPELINE_EXTENSIONS.test(name)).sort();
    if (names.length === 0) throw new UsageError(`no .yaml or .yml files in ${path}`);
    files.push(...names.map((name) => join(path, name)));
  }
  return files;
}

export async function validateFiles(
  paths: readonly string[],
  options: { progress?: ValidateProgress } = {},
): Promise<FileReport[]> {
  const { progress } = options;
  const reports: FileReport[] = [];
  for (const file of await resolvePipelinePaths(paths)) {
    progress?.start(file);
    const result = await loadPipelineFile(file, {
      checkEachUpTo: VALIDATE_EACH_UP_TO,
      onProgress: progress?.update,
    });
    progress?.stop();
    reports.push(
      result.ok
        ? {
            file,
            ok: true,
            issues: result.warnings,
            stats: result.stats,
            check: result.check,
            taskRowsBytes: estimateTaskRowsBytes(result.stats.unique, result.check.taskTextChars),
          }
        : { file, ok: false, issues: result.issues },
    );
  }
  return reports;
}

export function renderReports(reports: readonly FileReport[]): string {
  const lines: string[] = [];
  for (const report of reports) {
    for (const issue of report.issues) lines.push(formatIssue(issue));
    if (report.ok) lines.push(...okLines(report));
  }
  const invalid = reports.filter((report) => !report.ok).length;
  lines.push(
    invalid === 0
      ? `${reports.length} file${reports.length === 1 ? '' : 's'} valid`
      : `${invalid} of ${reports.length} file${reports.length === 1 ? '' : 's'} invalid`,
  );
  return lines.join('\n');
}

/** `ok FILE (counts)`, then how a large file was checked and what a run of it writes. */
function okLines(report: FileReport): string[] {
  const { stats, check, taskRowsBytes } = report;
  if (stats === undefined) return [`ok ${report.file}`];
  const items = `${stats.items} search${stats.items === 1 ? '' : 'es'}`;
  const sampled = check !== undefined && !check.everySearch;
  const tasks = `${sampled ? 'at most ' : ''}${stats.unique} task${stats.unique === 1 ? '' : 's'}`;
  const lines = [`ok ${report.file} (${items}, ${tasks})`];
  if (sampled) {
    lines.push(
      `  ${stats.expanded} searches, more than ${VALIDATE_EACH_UP_TO}: checked ${check.checked} of them (each matrix value, pairs of request-field values, the longest query); duplicates not counted (\`harvest plan\` counts them)`,
    );
  }
  if (taskRowsBytes !== undefined && (sampled || taskRowsBytes >= SHOW_SIZE_FROM_BYTES)) {
    lines.push(
      `  a run writes about ${formatSize(taskRowsBytes)} of task rows to the database before its first search (${stats.unique} tasks × about ${formatSize(taskRowsBytes / Math.max(stats.unique, 1))} each, from the request JSON of the searches checked)`,
    );
  }
  return lines;
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/** How far the check of one file is, for a person watching a terminal. */
export interface ValidateProgress {
  start(file: string): void;
  update(checked: number, total: number): void;
  stop(): void;
}

/** Shown after this long on one file, and redrawn at most this often. */
const PROGRESS_AFTER_MS = 1000;
const PROGRESS_EVERY_MS = 100;

/**
 * One line on `stream` (a terminal) saying how many searches of a file are checked, once the
 * file has taken PROGRESS_AFTER_MS; erased when the file is done. Validation runs without
 * yielding, so the line is written as the check reports, not on a timer.
 */
export function createValidateProgress(
  stream: NodeJS.WritableStream = process.stderr,
  nowMs: () => number = Date.now,
): ValidateProgress {
  let file = '';
  let startedAt = 0;
  let drawnAt: number | undefined;
  return {
    start(name) {
      file = name;
      startedAt = nowMs();
      drawnAt = undefined;
    },
    update: (checked, total) => {
      const now = nowMs();
      if (now - startedAt < PROGRESS_AFTER_MS) return;
      if (drawnAt !== undefined && now - drawnAt < PROGRESS_EVERY_MS) return;
      drawnAt = now;
      const percent = total === 0 ? 100 : Math.floor((checked / total) * 100);
      stream.write(
        `\r\u001b[Kvalidating ${file}: ${checked} of ${total} searches checked (${percent}%)`,
      );
    },
    stop() {
      if (drawnAt !== undefined) stream.write('\r\u001b[K');
      drawnAt = undefined;
    },
  };
}

export function registerValidate(program: Command, _ctx: CommandContext): void {
  program
    .command('validate')
    .description('Check pipeline files; report every problem with file:line:column.')
    .argument('<paths...>', 'pipeline files or directories of *.yaml files')
    .option('--json', 'print a JSON report')
    .addHelpText(
      'after',
      '\nExamples:\n  harvest validate pipelines/\n  harvest validate news.yaml --json | jq .ok',
    )
    .action(async (paths: string[], options: { json?: boolean }) => {
      const progress = process.stderr.isTTY ? createValidateProgress() : undefined;
      const reports = await validateFiles(paths, { progress });
      if (options.json) {
        console.log(JSON.stringify({ ok: reports.every((r) => r.ok), files: reports }, null, 2));
      } else {
        console.log(renderReports(reports));
      }
      // A checker that finds problems exits 1, as linters do.
      if (reports.some((report) => !report.ok)) process.exitCode = EXIT.FAILED;
    });
}
