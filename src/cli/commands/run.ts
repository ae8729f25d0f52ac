/** `harvest run`: record a run, enqueue its tasks, and optionally follow it (or work it here). */
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import type { RunOptions } from '../actions/run.ts';
import type { CommandContext } from '../context.ts';
import { concurrency, duration, MAX_CONCURRENCY } from '../flags.ts';

export function registerRun(program: Command, ctx: CommandContext): void {
  program
    .command('run')
    .description('Record a run of a pipeline and enqueue its searches; --local runs it here.')
    .argument('[file]', 'pipeline YAML file')
    .option('--wait', 'follow the run to its end with a progress bar and a summary')
    .option('--local', 'also run the workers in this process (implies --wait)')
    .option(
      '-c, --concurrency <n>',
      `searches in flight with --local, at most ${MAX_CONCURRENCY} (default: the pipeline's run.concurrency, else 16)`,
      concurrency,
    )
    .option(
      '--resume <run>',
      're-enqueue every unfinished task of RUN (after a pause, an interruption or a lost Redis)',
    )
    .option('--retry-failed', 'with --resume: enqueue the failed tasks again too')
    .option(
      '--give-up-after <duration>',
      'while following: stop waiting for an unreachable API after this long (90s, 10m, 2h), exit 3 (default: wait)',
      duration,
    )
    .option(
      '--json',
      'print the run id (without --wait) or the final summary as JSON, with ok and exitCode',
    )
    .addHelpText(
      'after',
      `
Ctrl-C of a local run stops it: its queued jobs leave the queue, calls in flight finish and are
recorded, and the run is 'interrupted' until \`harvest run --resume RUN\`. Ctrl-C again stops at
once (calls in flight are recorded as lost, cost unknown). Ctrl-C while the plan is written
(before anything is enqueued) leaves any run 'interrupted'; --resume writes the rest of its plan.

An unreachable API (refused, DNS, TLS, a run of 5xx or timeouts) pauses the searches, attempts
unspent, until a probe is answered; the run is followed through it, unless --give-up-after says
otherwise (exit 3, with the resume command). An API address that never answered since the
command started ends --local at once (exit 3).

Examples:
  harvest run pipelines/bulk-dataset.yaml            # enqueue; \`harvest worker\` runs it
  harvest run pipelines/demo.yaml --local            # run here, with a progress bar
  harvest run --resume 20261122T101500-a1b2 --wait   # continue a paused or interrupted run
  harvest run --resume 20261122T101500-a1b2 --retry-failed --local
  harvest run pipelines/demo.yaml --local --give-up-after 30m`,
    )
    .action(async (file: string | undefined, opts: RunOptions) => {
      if (!file && !opts.resume) throw new UsageError('give a pipeline file, or --resume RUN');
      if (file && opts.resume)
        throw new UsageError('give either a pipeline file or --resume RUN, not both');
      if (opts.giveUpAfter !== undefined && !opts.wait && !opts.local)
        throw new UsageError('--give-up-after goes with --wait or --local');
      if (opts.retryFailed && !opts.resume)
        throw new UsageError('--retry-failed goes with --resume RUN');
      if (opts.concurrency !== undefined && !opts.local) {
        throw new UsageError(
          "-c goes with --local (workers elsewhere take theirs from `harvest worker -c`; a run's own limit is its pipeline's run.concurrency)",
        );
      }
      const { runCommand } = await import('../actions/run.ts');
      process.exitCode = await runCommand(ctx, file, opts);
    });
}
