/**
 * `harvest demo` (what `npm start` runs): the whole product offline. Starts the sandbox in
 * this process, runs an example pipeline against it with local workers, prints the summary.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { assertRedisReachable } from '../../queue/connection.ts';
import type { CommandContext } from '../context.ts';
import { positiveInt } from '../flags.ts';

// From src/cli/commands/ (or dist/src/cli/commands/ when compiled) up to the package's root.
const ROOT = new URL(
  import.meta.url.includes('/dist/src/') ? '../../../../' : '../../../',
  import.meta.url,
);
const EXAMPLE = fileURLToPath(new URL('pipelines/demo.yaml', ROOT));

export function registerDemo(program: Command, ctx: CommandContext): void {
  program
    .command('demo')
    .description('Run an example pipeline end to end against the built-in sandbox (offline).')
    .argument('[file]', "pipeline to run (default: harvest's pipelines/demo.yaml)")
    .option('-c, --concurrency <n>', 'searches in flight', positiveInt, 8)
    .addHelpText('after', '\nExamples:\n  npm start\n  harvest demo pipelines/bulk-dataset.yaml')
    .action(async (given: string | undefined, opts: { concurrency: number }) => {
      const file = given ?? EXAMPLE;
      // A pipeline that cannot run is said before a sandbox and workers are started for it.
      const { loadValidPipeline } = await import('../../run/start.ts');
      await loadValidPipeline(file);
      const base = ctx.settings();
      await assertRedisReachable(base.redisUrl);
      // Loaded here: the sandbox (Fastify and all) weighs on every other command's memory.
      const { startSandbox } = await import('../../sandbox/index.ts');
      const sandbox = await startSandbox({ port: 0, latency: { minMs: 5, maxMs: 40 } });
      const settings = Object.freeze({
        ...base,
        apiUrl: sandbox.url,
        apiKey: sandbox.keys[0]!.key,
        queuePrefix: `${base.queuePrefix}-demo`,
        dbPath: path.join(base.dataDir, 'demo.db'),
      });
      process.stderr.write(`sandbox listening on ${sandbox.url}\n`);
      try {
        const { runCommand } = await import('../actions/run.ts');
        process.exitCode = await runCommand({ settings: () => settings }, file, {
          local: true,
          wait: true,
          concurrency: opts.concurrency,
        });
        const billed = Object.values(sandbox.ledger().teams).reduce(
          (a, t) => a + t.creditsCharged,
          0,
        );
        process.stdout.write(
          `  billed  ${billed} credits by the sandbox\n\nlook around: HARVEST_DB=${settings.dbPath} npx harvest status\n`,
        );
      } finally {
        await sandbox.close();
      }
    });
}
