/** `harvest report costs`: credits from stored calls, grouped, as a table, JSON, CSV or HTML. */
import path from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import { formatByExtension } from '../../report/export/formats.ts';
import { COST_GROUPS, type CostGroup } from '../../store/queries/cost-report.ts';
import type { CommandContext } from '../context.ts';
import { dashIsStdout, oneOf, parseSince } from '../flags.ts';
import { sayReadOnlyFolder } from '../read-only-notice.ts';

const FORMATS = ['table', 'json', 'csv', 'html'] as const;

/** The format `--out`'s extension names (`costs.csv`), read as `export` reads its own. */
const BY_EXTENSION: Record<string, (typeof FORMATS)[number]> = {
  '.json': 'json',
  '.csv': 'csv',
  '.html': 'html',
  '.htm': 'html',
  '.txt': 'table',
};

interface CostFlags {
  by?: CostGroup;
  run?: string;
  since?: number;
  format?: (typeof FORMATS)[number];
  out?: string;
  csvRaw?: boolean;
  compareEstimate?: boolean;
  json?: boolean;
}

const HELP = `
Credits come from the calls the service charged (creditsUsed), never from estimates. A call of
unknown cost (LOST with its worker, an unreadable answer) is counted apart, never guessed.
Retries: a task's calls beyond its first. Re-issues: searches called again for fresh media URLs.
--by source and --by format group by what each search asked for (one call pays for all of it).
Budget use and --compare-estimate (the plan's credit bounds) are per run: --by run.

Examples:
  harvest report costs
  harvest report costs --by day --since 2026-11-01
  harvest report costs --by run --compare-estimate
  harvest report costs --run 20261122T101500-a1b2 --by outcome --format json
  harvest report costs --out costs.html         # the format from the extension: html, csv, json

A CSV text cell that begins with = + - @, a tab or a CR (a formula to a spreadsheet) is written
with a leading ' unless --csv-raw; numbers stay numbers.`;

/**
 * --json asks for JSON; --format, or else --out's extension (c.html), may ask for another. An
 * extension that names no format written here (c.pdf) is refused rather than guessed.
 */
function chooseFormat(flags: CostFlags): (typeof FORMATS)[number] {
  const fromFile = flags.out ? formatByExtension(flags.out, BY_EXTENSION) : undefined;
  const extension = flags.out ? path.extname(flags.out) : '';
  if (extension !== '' && fromFile === undefined && flags.format === undefined && !flags.json) {
    const known = FORMATS.map(
      (f) =>
        `${f} (${Object.keys(BY_EXTENSION)
          .filter((e) => BY_EXTENSION[e] === f)
          .join(', ')})`,
    );
    throw new UsageError(
      `cannot write a ${extension} report: report costs writes ${known.join(', ')}; name --out so, or give --format`,
    );
  }
  const asked = flags.format ?? fromFile;
  const format = flags.json ? 'json' : (asked ?? 'table');
  if (flags.json && asked !== undefined && asked !== 'json') {
    const by = flags.format ? `--format ${asked}` : `--out ${flags.out} (${asked})`;
    throw new UsageError(
      `--json and ${by} ask for two formats: drop --json, or ask for JSON alone`,
    );
  }
  if (flags.csvRaw && format !== 'csv') {
    throw new UsageError(`--csv-raw applies to CSV only (the format is ${format})`);
  }
  return format;
}

export function registerReport(program: Command, ctx: CommandContext): void {
  const report = program.command('report').description('Reports over what harvest stored.');
  report
    .command('costs')
    .description('Credits, calls, failures, results and credits per result, grouped.')
    .option(
      '--by <key>',
      `group by ${COST_GROUPS.join(', ')} (default: pipeline, or run with --compare-estimate)`,
      oneOf(COST_GROUPS),
    )
    .option('--run <run>', 'only this run')
    .option(
      '--since <date>',
      'only calls from DATE on (YYYY-MM-DD or ISO date-time, UTC)',
      parseSince,
    )
    .option(
      '--format <format>',
      `${FORMATS.join(', ')} (default: from --out's extension, else table)`,
      oneOf(FORMATS),
    )
    .option(
      '--out <file>',
      'write here (completely or not at all); default (and -) stdout; .txt, .json, .csv, .html',
    )
    .option(
      '--csv-raw',
      "CSV: write text cells as they are, even those a spreadsheet runs as formulas (default: a leading ')",
    )
    .option('--compare-estimate', "put each run's plan estimate beside its actual cost")
    .option(
      '--json',
      'the report as JSON (as --format json), errors too; with --out, only to a file whose extension names no other format',
    )
    .addHelpText('after', HELP)
    .action(async (given: CostFlags) => {
      const flags = dashIsStdout(given);
      const format = chooseFormat(flags);
      const { openStore } = await import('../../store/index.ts');
      const { runCostReport } = await import('../../report/costs/run-report.ts');
      const store = openStore(ctx.settings().dbPath, {
        readonly: true,
        onReadOnlyFolder: sayReadOnlyFolder,
      });
      try {
        await runCostReport(
          store,
          {
            by: flags.by ?? (flags.compareEstimate ? 'run' : 'pipeline'),
            runId: flags.run,
            sinceMs: flags.since,
            compareEstimate: flags.compareEstimate,
            format,
            out: flags.out,
            csvRaw: flags.csvRaw,
          },
          { stdout: process.stdout },
        );
        if (flags.out && flags.json) {
          // --json: stdout is JSON whatever happens, as `export --json --out` prints its summary.
          const summary = { ok: true, out: flags.out, format };
          process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
        } else if (flags.out) {
          process.stdout.write(`wrote the ${format} cost report to ${flags.out}\n`);
        }
      } finally {
        store.close();
      }
    });
}
