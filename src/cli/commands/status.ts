/** `harvest status`: runs and their counts, credits, errors by code, and why a run is paused. */

import { Queue } from 'bullmq';
import type { Command } from 'commander';
import type { Settings } from '../../config.ts';
import { HarvestError } from '../../errors.ts';
import { createRedis } from '../../queue/connection.ts';
import { harvestKeys, QUEUES } from '../../queue/names.ts';
import { pausedReason } from '../../run/runtime.ts';
import { openStore, type RunStatusReport } from '../../store/index.ts';
import type { CommandContext } from '../context.ts';
import { positiveInt } from './run.ts';

export function registerStatus(program: Command, ctx: CommandContext): void {
  program
    .command('status')
    .description('Show runs (newest first), or one run in detail.')
    .argument('[run]', 'run id (default: list recent runs)')
    .option('--json', 'machine-readable output')
    .option('-n, --limit <n>', 'runs to list', positiveInt, 20)
    .addHelpText(
      'after',
      '\nExamples:\n  harvest status\n  harvest status 20261122T101500-a1b2 --json',
    )
    .action(async (runId: string | undefined, opts: { json?: boolean; limit: number }) => {
      const settings = ctx.settings();
      const store = openStore(settings.dbPath, { readonly: true });
      try {
        if (!runId) {
          const runs = store.runs.list({ limit: opts.limit });
          if (opts.json) return print(JSON.stringify(runs, null, 2));
          if (runs.length === 0) return print(`no runs yet in ${settings.dbPath}`);
          for (const r of runs) {
            const c = store.tasks.counts(r.id);
            print(
              `${r.id}  ${r.status.padEnd(9)} ${r.pipelineName}  ${c.done}/${c.total} done, ${c.failed} failed  ${new Date(r.createdAt).toISOString()}`,
            );
          }
          return;
        }
        const report = store.runStatus(runId);
        if (!report)
          throw new HarvestError('RUN_NOT_FOUND', `no run ${runId} in ${settings.dbPath}`, {
            exitCode: 2,
          });
        const paused = await queuePaused(settings);
        if (opts.json)
          return print(JSON.stringify({ ...report, queuePaused: paused ?? null }, null, 2));
        print(formatReport(report, paused));
      } finally {
        store.close();
      }
    });
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** The queue's pause reason, or undefined when Redis is not reachable or nothing is paused. */
async function queuePaused(settings: Settings) {
  const redis = createRedis(settings.redisUrl, 'client');
  redis.on('error', () => {});
  const searchQueue = new Queue(QUEUES.search, { connection: redis, prefix: settings.queuePrefix });
  try {
    return await pausedReason({ redis, searchQueue, keys: harvestKeys(settings.queuePrefix) });
  } catch {
    return undefined;
  } finally {
    await searchQueue.close().catch(() => {});
    redis.disconnect();
  }
}

export function formatReport(
  r: RunStatusReport,
  paused: { code: string; reason: string } | undefined,
): string {
  const t = r.tasks;
  const lines = [
    `run ${r.run.id} (${r.run.pipelineName}): ${r.run.status}`,
    `  tasks    ${t.total}: done ${t.done}, failed ${t.failed}, retrying ${t.retrying}, queued ${t.queued}, running ${t.running}`,
    `  calls    ${r.calls.calls}, credits used ${r.calls.creditsUsed}${r.run.maxCredits === null ? '' : ` of ${r.run.maxCredits}`}${r.calls.unknownCostCalls ? ` (+${r.calls.unknownCostCalls} calls of unknown cost)` : ''}`,
    `  results  ${r.results} (${r.newUrls} URLs seen for the first time)`,
  ];
  const byCode = Object.entries(r.errors.callsByCode);
  if (byCode.length > 0) {
    lines.push(`  errors   ${byCode.map(([code, n]) => `${code} ${n}`).join(', ')}`);
  }
  for (const e of r.errors.recent) {
    lines.push(
      `    ${e.outcome}${e.status ? ` ${e.status}` : ''} on ${e.taskKey} (attempt ${e.attempt}): ${e.errorMessage ?? ''}`,
    );
  }
  const reason =
    paused ?? (r.run.pausedReason ? { code: 'PAUSED', reason: r.run.pausedReason } : undefined);
  if (reason) {
    lines.push(`  PAUSED   ${reason.code}: ${reason.reason}`);
    lines.push(`  resume   harvest run --resume ${r.run.id} --wait`);
  }
  return lines.join('\n');
}
