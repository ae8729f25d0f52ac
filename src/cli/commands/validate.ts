/** `harvest validate <file|dir>...`: check pipeline files; exit 1 when any has an error. */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import {
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
}

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

export async function validateFiles(paths: readonly string[]): Promise<FileReport[]> {
  const reports: FileReport[] = [];
  for (const file of await resolvePipelinePaths(paths)) {
    const result = await loadPipelineFile(file);
    reports.push(
      result.ok
        ? { file, ok: true, issues: result.warnings, stats: result.stats }
        : { file, ok: false, issues: result.issues },
    );
  }
  return reports;
}

export function renderReports(reports: readonly FileReport[]): string {
  const lines: string[] = [];
  for (const report of reports) {
    for (const issue of report.issues) lines.push(formatIssue(issue));
    if (report.ok) {
      const stats = report.stats;
      const counts = stats
        ? ` (${stats.items} search${stats.items === 1 ? '' : 'es'}, ${stats.unique} task${stats.unique === 1 ? '' : 's'})`
        : '';
      lines.push(`ok ${report.file}${counts}`);
    }
  }
  const invalid = reports.filter((report) => !report.ok).length;
  lines.push(
    invalid === 0
      ? `${reports.length} file${reports.length === 1 ? '' : 's'} valid`
      : `${invalid} of ${reports.length} file${reports.length === 1 ? '' : 's'} invalid`,
  );
  return lines.join('\n');
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
      const reports = await validateFiles(paths);
      if (options.json) {
        console.log(JSON.stringify({ ok: reports.every((r) => r.ok), files: reports }, null, 2));
      } else {
        console.log(renderReports(reports));
      }
      // A checker that finds problems exits 1, as linters do.
      if (reports.some((report) => !report.ok)) process.exitCode = EXIT.FAILED;
    });
}
