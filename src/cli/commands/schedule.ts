/** `harvest schedule apply|ls|rm`: pipelines' schedules as BullMQ job schedulers. */
import type { Command } from 'commander';
import type { ApplyOptions, ListOptions } from '../actions/schedule.ts';
import type { CommandContext } from '../context.ts';
import { positiveInt } from '../flags.ts';

export function registerSchedule(program: Command, ctx: CommandContext): void {
  const schedule = program
    .command('schedule')
    .description("Run pipelines on their `schedule:` (cron + tz) with the workers' runs role.");

  schedule
    .command('apply')
    .description("Create or update a job scheduler for each pipeline's schedule.")
    .argument('<paths...>', 'pipeline files or directories of them')
    .option('--prune', 'also remove the schedules of pipelines not among these files')
    .option('--dry-run', 'say what would change, change nothing')
    .option('--json', 'machine-readable output')
    .addHelpText(
      'after',
      `
A pipeline without \`schedule:\` loses its scheduler. Ticks are started by any worker with the
runs role (\`harvest worker\` has it by default, on the host that owns the database).

Examples:
  harvest schedule apply pipelines/
  harvest schedule apply pipelines/ --prune --dry-run`,
    )
    .action(async (paths: string[], opts: ApplyOptions) => {
      const { applyCommand } = await import('../actions/schedule.ts');
      await applyCommand(ctx.settings(), paths, opts);
    });

  schedule
    .command('ls')
    .description("List schedules with their next run times in each pipeline's time zone.")
    .option('--json', 'machine-readable output')
    .option('-n, --next <count>', 'next run times shown per schedule', positiveInt, 3)
    .addHelpText(
      'after',
      '\nExamples:\n  harvest schedule ls\n  harvest schedule ls --next 10 --json',
    )
    .action(async (opts: ListOptions) => {
      const { listCommand } = await import('../actions/schedule.ts');
      await listCommand(ctx.settings(), opts);
    });

  schedule
    .command('rm')
    .description("Remove a pipeline's schedule (its runs so far are kept).")
    .argument('<name>', 'pipeline name')
    .option('--json', 'machine-readable output')
    .addHelpText('after', '\nExamples:\n  harvest schedule rm weekly-research')
    .action(async (name: string, opts: { json?: boolean }) => {
      const { removeCommand } = await import('../actions/schedule.ts');
      await removeCommand(ctx.settings(), name, opts);
    });
}
