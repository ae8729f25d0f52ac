/** `harvest export`: results, calls or tasks out of SQLite as JSONL, CSV or Parquet, streamed. */
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import { EXPORT_FORMATS, type ExportFormat, formatOfFile } from '../../report/export/formats.ts';
import type { ResultSource } from '../../store/index.ts';
import {
  EXPORT_COLUMNS,
  EXPORT_KINDS,
  type ExportColumn,
  type ExportKind,
} from '../../store/queries/export-columns.ts';
import type { CommandContext } from '../context.ts';
import { dashIsStdout, oneOf, parseList, parseSince } from '../flags.ts';
import { sayReadOnlyFolder } from '../read-only-notice.ts';

const SOURCES: readonly ResultSource[] = ['web', 'news', 'images'];

interface ExportFlags {
  of: ExportKind;
  run?: string;
  pipeline?: string;
  since?: number;
  onlyNew?: boolean;
  sinceRun?: string;
  source?: ResultSource;
  fields?: string[];
  uniqueUrls?: boolean;
  onlyChanged?: boolean;
  format?: ExportFormat;
  out?: string;
  csvRaw?: boolean;
  json?: boolean;
}

function columnHelp(kind: ExportKind, columns: readonly ExportColumn[]): string {
  const width = Math.max(...columns.map((c) => c.name.length + c.type.length + 3));
  const lines = columns.map((c) => `  ${`${c.name} (${c.type})`.padEnd(width)}  ${c.doc}`);
  return `\nColumns of --of ${kind}:\n${lines.join('\n')}`;
}

const HELP = `
The same columns, in this order, in every format (--fields picks and orders a subset).
JSONL: one object per line; timestamps ISO 8601 UTC; json columns nested. CSV: RFC 4180,
header row, CRLF, an empty field is null; a text cell that begins with = + - @, a tab or a CR
(a formula to a spreadsheet) is written with a leading ' unless --csv-raw; numbers stay numbers.
Parquet: nullable columns; string UTF8, integer INT64, timestamp TIMESTAMP(MILLIS, UTC), json a
string with the JSON logical type. --out writes a file whole or not at all; a device, a FIFO or
a socket as the rows come; a symbolic link's file (the link stays). See docs/export.md.
${EXPORT_KINDS.map((k) => columnHelp(k, EXPORT_COLUMNS[k])).join('\n')}

Examples:
  harvest export --run 20261122T101500-a1b2 --format csv --out results.csv
  harvest export --pipeline weekly-research --only-new --unique-urls --format jsonl | jq .url
  harvest export --pipeline weekly-research --since 2026-11-01 --fields url,title,first_seen_at --out new.parquet
  harvest export --of calls --run 20261122T101500-a1b2 --format csv --out calls.csv
  harvest export --of changes --pipeline weekly-research --format csv --out changes.csv`;

/**
 * The format from --out's extension. A name with no extension (a device, a FIFO) means JSONL; an
 * extension that names no format (`.xlsx`, `.json`) is refused rather than written as JSONL.
 */
function formatOfOut(out: string): ExportFormat {
  const format = formatOfFile(out);
  if (format) return format;
  const ext = path.extname(path.basename(out));
  if (ext === '') return 'jsonl';
  throw new UsageError(
    `cannot write a ${ext} export: export writes jsonl (.jsonl, .ndjson), csv (.csv), parquet (.parquet); name --out so, or give --format`,
  );
}

function chooseFormat(flags: ExportFlags): ExportFormat {
  const format = flags.format ?? (flags.out ? formatOfOut(flags.out) : 'jsonl');
  if (format === 'parquet' && !flags.out && process.stdout.isTTY) {
    throw new UsageError('Parquet is binary: give --out FILE, or pipe stdout elsewhere');
  }
  if (flags.csvRaw && format !== 'csv') {
    throw new UsageError(`--csv-raw applies to CSV only (the format is ${format})`);
  }
  return format;
}

export function registerExport(program: Command, ctx: CommandContext): void {
  const command = program
    .command('export')
    .description(
      'Export results (or calls, tasks) as JSONL, CSV or Parquet; streams, to stdout by default.',
    );
  addExportOptions(command)
    .addHelpText('after', HELP)
    .action((given: ExportFlags) => exportRows(ctx, given));
}

/** The options of `harvest export`, in the order help lists them. */
function addExportOptions(command: Command): Command {
  return command
    .option(
      '--of <kind>',
      `rows to export: ${EXPORT_KINDS.join(', ')}`,
      oneOf(EXPORT_KINDS),
      'results',
    )
    .option('--run <run>', 'only this run')
    .option('--pipeline <name>', 'only runs of this pipeline')
    .option(
      '--since <date>',
      'only rows from DATE on (YYYY-MM-DD or ISO date-time, UTC)',
      parseSince,
    )
    .option(
      '--only-new',
      'only results whose URL the pipeline had not seen before the run (default: the latest)',
    )
    .option(
      '--since-run <run>',
      'with --only-new: count from this run (and export its later runs too)',
    )
    .option('--unique-urls', 'one row per URL across tasks and runs (the first seen)')
    .option(
      '--only-changed',
      "only results new or changed since their run's previous completed run (harvest changes)",
    )
    .option(
      '--source <source>',
      `only results of one source: ${SOURCES.join(', ')}`,
      oneOf(SOURCES),
    )
    .option('--fields <list>', 'comma-separated columns, in output order (default: all)', parseList)
    .option(
      '--format <format>',
      `${EXPORT_FORMATS.join(', ')} (default: from --out's extension; jsonl when it has none)`,
      oneOf(EXPORT_FORMATS),
    )
    .option('--out <file>', 'write here (completely or not at all); default (and -) stdout')
    .option(
      '--csv-raw',
      "CSV: write text cells as they are, even those a spreadsheet runs as formulas (default: a leading ')",
    )
    .option('--json', 'with --out: print the summary (rows, columns, file) as JSON; errors too');
}

/** The action of `harvest export`: streams the rows, then says what it wrote. */
async function exportRows(ctx: CommandContext, given: ExportFlags): Promise<void> {
  const flags = dashIsStdout(given);
  if (flags.json && !flags.out) {
    throw new UsageError('--json prints a summary of the export: give --out FILE');
  }
  const format = chooseFormat(flags);
  const { openStore } = await import('../../store/index.ts');
  const { runExport } = await import('../../report/export/run-export.ts');
  const { createExportProgress } = await import('../export-progress.ts');
  const store = openStore(ctx.settings().dbPath, {
    readonly: true,
    onReadOnlyFolder: sayReadOnlyFolder,
  });
  try {
    const summary = await runExport(
      store,
      {
        of: flags.of,
        format,
        out: flags.out,
        runId: flags.run,
        pipelineName: flags.pipeline,
        sinceMs: flags.since,
        onlyNew: flags.onlyNew,
        sinceRunId: flags.sinceRun,
        source: flags.source,
        uniqueUrls: flags.uniqueUrls,
        onlyChanged: flags.onlyChanged,
        fields: flags.fields,
        csvRaw: flags.csvRaw,
        // Parquet: V8 sized for memory keeps this thread's peak heap (the rows as SQLite hands
        // them over) under the export's 200 MB target; bin/harvest.js leaves the choice to this
        // command. Not for JSONL and CSV: it slows their reader threads.
        sizeForMemory: () => setFlagsFromString('--optimize-for-size'),
        // A private copy of the database (a read-only folder): no reader thread can open it.
        ...(store.readsCopy ? { readerThreads: 0 } : {}),
      },
      {
        stdout: process.stdout,
        progress: flags.out && process.stderr.isTTY ? createExportProgress() : undefined,
      },
    );
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ ok: true, ...summary }, null, 2)}\n`);
    } else if (summary.out !== null) {
      process.stdout.write(
        `exported ${summary.rows} ${summary.kind} (${summary.columns.length} columns) to ${summary.out} as ${summary.format}\n`,
      );
    }
  } finally {
    store.close();
  }
}
