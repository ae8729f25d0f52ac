/** `harvest run`: record a run, enqueue its tasks, and optionally follow it (or work it here). */
import { type Command, InvalidArgumentError } from 'commander';
import { UsageError } from '../../errors.ts';
import { createLogger } from '../../log.ts';
import type { Pool } from '../../queue/pool.ts';
import { closeOnSignals, startLocalPool } from '../../run/local.ts';
import { openRuntime } from '../../run/runtime.ts';
import { loadValidPipeline, resumeRun, startRun } from '../../run/start.ts';
import { type Progress, waitForRun } from '../../run/wait.ts';
import type { CommandContext } from '../context.ts';
import { createProgressView, formatSummary } from '../progress.ts';

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number >= 1');
  return n;
}

/** Exit codes: 0 every task done, 1 some task failed, 4 paused (401/402) or interrupted. */
export function exitCodeFor(p: Progress): number {
  if (p.status !== 'completed' && p.status !== 'failed') return 4;
  return p.failed === 0 && p.status === 'completed' ? 0 : 1;
}

export function registerRun(program: Command, ctx: CommandContext): void {
  program
    .command('run')
    .description('Record a run of a pipeline and enqueue its searches; --local runs it here.')
    .argument('[file]', 'pipeline YAML file')
    .option('--wait', 'follow the run to its end with a progress bar and a summary')
    .option('--local', 'also run the workers in this process (implies --wait)')
    .option(
      '-c, --concurrency <n>',
      "searches in flight with --local (default: the pipeline's run.concurrency, else 16)",
      positiveInt,
    )
    .option(
      '--resume <run>',
      're-enqueue every unfinished task of RUN (after a pause or a lost Redis)',
    )
    .option('--json', 'print the final summary as JSON')
    .addHelpText(
      'after',
      '\nExamples:\n  harvest run pipelines/bulk-dataset.yaml            # enqueue; `harvest worker` runs it\n  harvest run pipelines/demo.yaml --local            # run here, with a progress bar\n  harvest run --resume 20261122T101500-a1b2 --wait   # continue a paused or interrupted run',
    )
    .action(async (file: string | undefined, opts: RunOptions) => {
      if (!file && !opts.resume) throw new UsageError('give a pipeline file, or --resume RUN');
      if (file && opts.resume)
        throw new UsageError('give either a pipeline file or --resume RUN, not both');
      process.exitCode = await runCommand(ctx, file, opts);
    });
}

interface RunOptions {
  wait?: boolean;
  local?: boolean;
  concurrency?: number;
  resume?: string;
  json?: boolean;
}

export async function runCommand(
  ctx: CommandContext,
  file: string | undefined,
  opts: RunOptions,
): Promise<number> {
  const settings = ctx.settings();
  const logger = createLogger({ level: settings.logLevel ?? 'warn' });
  // A bad file is reported before anything else is touched (Redis, the database).
  const loaded = file ? await loadValidPipeline(file) : undefined;
  const runtime = await openRuntime(settings);
  let pool: Pool | undefined;
  let releaseSignals: (() => void) | undefined;
  try {
    let runId: string;
    let concurrency = opts.concurrency;
    if (opts.resume) {
      ({ runId } = await resumeRun(runtime, opts.resume, { logger }));
    } else {
      const started = await startRun(runtime, loaded!, { logger });
      runId = started.runId;
      concurrency ??= started.pipeline.run?.concurrency;
      for (const w of started.warnings) process.stderr.write(`warning: ${w}\n`);
      process.stderr.write(
        `run ${runId}: ${started.taskCount} tasks, estimated ${started.estimate.min}..${started.estimate.max} credits\n`,
      );
    }
    if (opts.local) {
      pool = await startLocalPool(settings, {
        roles: ['search', 'store'],
        ...(concurrency === undefined ? {} : { concurrency }),
        store: runtime.store,
        logger,
      });
    }
    if (!opts.wait && !opts.local) {
      process.stdout.write(`${runId}\n`);
      process.stderr.write(
        `enqueued; start workers with \`harvest worker\`, follow with \`harvest status ${runId}\`\n`,
      );
      return 0;
    }
    const controller = new AbortController();
    if (pool) releaseSignals = closeOnSignals(pool, logger, () => controller.abort());
    const view = createProgressView();
    const final = await waitForRun(runtime, runId, {
      onProgress: (p) => view.update(p),
      signal: controller.signal,
    });
    view.stop();
    if (opts.json) process.stdout.write(`${JSON.stringify(final, null, 2)}\n`);
    else process.stdout.write(`${formatSummary(final, settings.dbPath)}\n`);
    if (final.paused || (final.status !== 'completed' && final.status !== 'failed')) {
      process.stderr.write(`resume with: harvest run --resume ${runId} --local\n`);
    }
    return exitCodeFor(final);
  } finally {
    releaseSignals?.();
    await pool?.close();
    await runtime.close();
  }
}
