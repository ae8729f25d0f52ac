/**
 * `harvest changes [run]`: what changed in a run since the pipeline's previous completed run,
 * as a table, JSON, CSV or a self-contained HTML page.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import { formatByExtension } from '../../report/export/formats.ts';
import type { CommandContext } from '../context.ts';
import { dashIsStdout, oneOf, positiveInt } from '../flags.ts';
import { printMigration } from '../migration-notice.ts';

const FORMATS = ['table', 'json', 'csv', 'html'] as const;
type Format = (typeof FORMATS)[number];

const BY_EXTENSION: Record<string, Format> = {
  '.json': 'json',
  '.csv': 'csv',
  '.html': 'html',
  '.htm': 'html',
  '.txt': 'table',
};

interface ChangesFlags {
  sinceRun?: string;
  pipeline?: string;
  format?: Format;
  out?: string;
  detail?: boolean;
  csvRaw?: boolean;
  runs?: number;
  top?: number;
}

const HELP = `
Each result of the run is compared with the same search (entry, query and the fields a matrix
varies) in the pipeline's previous completed run: new, same, changed (same URL, its scraped
content differs), dropped, and moved up or down. Failed and cancelled runs are no baseline
unless --since-run names one. Credits per new and per changed result are from the credits the
run's calls were charged. Runs finished before changes were recorded are recorded now.

Examples:
  harvest changes                                   # the latest finished run
  harvest changes --pipeline weekly-research --detail
  harvest changes 20261122T101500-a1b2 --since-run 20261108T101500-c3d4 --format json
  harvest changes --pipeline weekly-research --out changes.html   # charts of ranks over runs`;

function chooseFormat(flags: ChangesFlags): Format {
  const fromFile = flags.out ? formatByExtension(flags.out, BY_EXTENSION) : undefined;
  const extension = flags.out ? path.extname(flags.out) : '';
  if (extension !== '' && fromFile === undefined && flags.format === undefined) {
    throw new UsageError(
      `cannot write a ${extension} report: changes writes .txt, .json, .csv or .html; name --out so, or give --format`,
    );
  }
  const format = flags.format ?? fromFile ?? 'table';
  if (flags.csvRaw && format !== 'csv') {
    throw new UsageError(`--csv-raw applies to CSV only (the format is ${format})`);
  }
  return format;
}

export function registerChanges(program: Command, ctx: CommandContext): void {
  program
    .command('changes')
    .description(
      "What changed in a run since the pipeline's previous run: new, same, changed, dropped, moved.",
    )
    .argument('[run]', 'the run (default: the latest finished run)')
    .option('--since-run <run>', 'compare with this run (any finished run of the pipeline)')
    .option('--pipeline <name>', 'the latest finished run of this pipeline')
    .option(
      '--format <format>',
      `${FORMATS.join(', ')} (default: from --out's extension, else table)`,
      oneOf(FORMATS),
    )
    .option('--out <file>', 'write here (completely or not at all); default (and -) stdout')
    .option('--detail', 'add a unified diff of the markdown of each changed page')
    .option('--csv-raw', "CSV: write text cells as they are (default: a leading ' on formulas)")
    .option('--runs <n>', 'HTML: runs the rank charts show (default 10)', positiveInt)
    .option('--top <n>', 'HTML: top results followed per search (default 10)', positiveInt)
    .addHelpText('after', HELP)
    .action(async (runId: string | undefined, given: ChangesFlags) => {
      const flags = dashIsStdout(given);
      const format = chooseFormat(flags);
      const { openStore } = await import('../../store/index.ts');
      const { runChangeReport } = await import('../../report/changes/run-report.ts');
      // Writable: runs finished before their changes were recorded are recorded now.
      const store = openStore(ctx.settings().dbPath, {
        mustExist: true,
        onMigrate: printMigration,
      });
      try {
        await runChangeReport(
          store,
          {
            runId,
            sinceRunId: flags.sinceRun,
            pipelineName: flags.pipeline,
            detail: flags.detail,
            format,
            out: flags.out,
            csvRaw: flags.csvRaw,
            charts: { runs: flags.runs, top: flags.top },
          },
          { stdout: process.stdout },
        );
        if (flags.out) process.stdout.write(`wrote the ${format} changes report to ${flags.out}\n`);
      } finally {
        store.close();
      }
    });
}
