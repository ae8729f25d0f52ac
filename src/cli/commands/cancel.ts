/** `harvest cancel RUN`: stop a run for good; calls in flight finish and are recorded. */
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';

export function registerCancel(program: Command, ctx: CommandContext): void {
  program
    .command('cancel')
    .description(
      'Cancel a run: its queued jobs leave the queue, calls in flight finish and are recorded.',
    )
    .argument('<run>', 'run id')
    .option('--json', 'machine-readable output')
    .addHelpText(
      'after',
      '\nA cancelled run is not worked again unless `harvest run --resume RUN` says so.\n\nExamples:\n  harvest cancel 20261122T101500-a1b2',
    )
    .action(async (runId: string, opts: { json?: boolean }) => {
      const { openRuntime } = await import('../../run/runtime.ts');
      const { stopRun } = await import('../../run/stop.ts');
      const { printMigration } = await import('../migration-notice.ts');
      const runtime = await openRuntime(ctx.settings(), {
        onMigrate: printMigration,
        mustExist: true,
      });
      try {
        const stopped = await stopRun(runtime, runId, 'cancelled');
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(stopped, null, 2)}\n`);
          return;
        }
        process.stdout.write(
          `run ${runId}: cancelled; ${stopped.removedJobs} queued jobs removed, ` +
            `${stopped.callsInFlight} calls in flight finish and are recorded\n`,
        );
      } finally {
        await runtime.close();
      }
    });
}
