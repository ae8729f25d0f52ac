/** `harvest prune`: remove old runs' results, calls and media files; their costs stay. */
import { type Command, InvalidArgumentError } from 'commander';
import { UsageError } from '../../errors.ts';
import { DURATION_FORMAT, parseDuration } from '../../pipeline/index.ts';
import type { PruneFlags } from '../actions/prune.ts';
import type { CommandContext } from '../context.ts';
import { positiveInt } from '../flags.ts';

/** `--older-than 30d`. */
export function olderThan(value: string): { ms: number; text: string } {
  const ms = parseDuration(value);
  if (ms === undefined) throw new InvalidArgumentError(`expected ${DURATION_FORMAT}`);
  return { ms, text: value.trim() };
}

const HELP = `
Runs are counted and aged newest first, whatever their status; of those beyond the rule, only
finished runs (completed, failed, cancelled) that save no more media are pruned. A pruned run
keeps its row, tasks and status; its calls' credits stay summed per run, day, source, format and
outcome, so \`harvest report costs\` says the same after. Content and media files that kept
rows still point at stay. Safe next to a running pool: it works in short transactions.

Examples:
  harvest prune --pipeline weekly-research --keep-runs 10
  harvest prune --pipeline weekly-research --older-than 30d --dry-run
  harvest prune --pipeline bulk-dataset --keep-runs 1 --json`;

export function registerPrune(program: Command, ctx: CommandContext): void {
  program
    .command('prune')
    .description(
      "Remove old runs' results, calls and media files of a pipeline; their credits stay in cost reports.",
    )
    .requiredOption('--pipeline <name>', 'the pipeline whose runs to prune')
    .option('--keep-runs <n>', 'keep the N most recent runs', positiveInt)
    .option(
      '--older-than <duration>',
      'prune runs created longer ago than this: 90m, 12h, 30d, 2w',
      olderThan,
    )
    .option('--dry-run', 'change nothing; print what would be removed and freed')
    .option('--json', 'machine-readable output')
    .addHelpText('after', HELP)
    .action(async (flags: PruneFlags) => {
      if ((flags.keepRuns === undefined) === (flags.olderThan === undefined)) {
        throw new UsageError('give exactly one of --keep-runs N or --older-than DURATION');
      }
      const { prune } = await import('../actions/prune.ts');
      await prune(ctx.settings(), flags);
    });
}
