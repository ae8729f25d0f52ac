/**
 * Every CLI command, in the order `harvest --help` lists them. A command's module (and all it
 * imports) is loaded only when that command runs or shows its own help: the list itself is
 * drawn from the names, terms and summaries here (test/unit/cli/commands.test.ts checks that
 * they agree with the modules).
 */
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';

export type RegisterCommand = (program: Command, ctx: CommandContext) => void;

export interface CommandEntry {
  readonly name: string;
  /** How `harvest --help` names the command: name, `[options]`, arguments. */
  readonly term: string;
  /** One line for `harvest --help`. */
  readonly summary: string;
  readonly load: () => Promise<RegisterCommand>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'validate',
    term: 'validate [options] <paths...>',
    summary: 'Check pipeline files; report every problem with file:line:column.',
    load: async () => (await import('./validate.ts')).registerValidate,
  },
  {
    name: 'plan',
    term: 'plan [options] <file>',
    summary: 'Show the tasks a pipeline expands to and its credit estimate (no network).',
    load: async () => (await import('./plan.ts')).registerPlan,
  },
  {
    name: 'schema',
    term: 'schema',
    summary: 'Print the JSON Schema of pipeline files.',
    load: async () => (await import('./schema.ts')).registerSchema,
  },
  {
    name: 'run',
    term: 'run [options] [file]',
    summary: 'Record a run of a pipeline and enqueue its searches; --local runs it here.',
    load: async () => (await import('./run.ts')).registerRun,
  },
  {
    name: 'worker',
    term: 'worker [options]',
    summary: 'Run a worker pool until SIGINT/SIGTERM (in-flight calls finish first).',
    load: async () => (await import('./worker.ts')).registerWorker,
  },
  {
    name: 'schedule',
    term: 'schedule',
    summary: "Run pipelines on their `schedule:` (cron + tz) with the workers' runs role.",
    load: async () => (await import('./schedule.ts')).registerSchedule,
  },
  {
    name: 'status',
    term: 'status [options] [run]',
    summary: 'Show runs (newest first), or one run in detail.',
    load: async () => (await import('./status.ts')).registerStatus,
  },
  {
    name: 'media',
    term: 'media [options] [run]',
    summary: 'Media of a run (or of all runs): counts by kind and status, failures, bytes stored.',
    load: async () => (await import('./media.ts')).registerMedia,
  },
  {
    name: 'cancel',
    term: 'cancel [options] <run>',
    summary: 'Cancel a run: its queued jobs leave the queue, calls in flight finish.',
    load: async () => (await import('./cancel.ts')).registerCancel,
  },
  {
    name: 'prune',
    term: 'prune [options]',
    summary: "Remove old runs' results, calls and media files; their credits stay in reports.",
    load: async () => (await import('./prune.ts')).registerPrune,
  },
  {
    name: 'export',
    term: 'export [options]',
    summary: 'Export results (or calls, tasks) as JSONL, CSV or Parquet.',
    load: async () => (await import('./export.ts')).registerExport,
  },
  {
    name: 'report',
    term: 'report',
    summary: 'Reports over what harvest stored (report costs).',
    load: async () => (await import('./report.ts')).registerReport,
  },
  {
    name: 'changes',
    term: 'changes [options] [run]',
    summary: 'What changed in a run since the previous one: new, changed, dropped, moved.',
    load: async () => (await import('./changes.ts')).registerChanges,
  },
  {
    name: 'history',
    term: 'history [options]',
    summary: "A URL's, or a query's top results', rank and content hash in every run.",
    load: async () => (await import('./history.ts')).registerHistory,
  },
  {
    name: 'crawls',
    term: 'crawls',
    summary: "The team's crawls on the service: the active ones, and a params preview.",
    load: async () => (await import('./crawls.ts')).registerCrawls,
  },
  {
    name: 'dashboard',
    term: 'dashboard [options]',
    summary: "Serve Bull Board over harvest's queues (read-only unless --allow-actions).",
    load: async () => (await import('./dashboard.ts')).registerDashboard,
  },
  {
    name: 'sandbox',
    term: 'sandbox [options]',
    summary: 'Run a local server speaking the Web Data Service API, with faults and a ledger.',
    load: async () => (await import('./sandbox.ts')).registerSandbox,
  },
  {
    name: 'demo',
    term: 'demo [options] [file]',
    summary: 'Run an example pipeline end to end against the built-in sandbox (offline).',
    load: async () => (await import('./demo.ts')).registerDemo,
  },
];

/**
 * The command a command line asks for (`harvest help NAME` asks for NAME's help), or undefined
 * for the program's own help, its version, or an unknown name.
 */
export function requestedCommand(args: readonly string[]): CommandEntry | undefined {
  const words = args.filter((a) => !a.startsWith('-'));
  const name = words[0] === 'help' ? words[1] : words[0];
  return COMMANDS.find((entry) => entry.name === name);
}
