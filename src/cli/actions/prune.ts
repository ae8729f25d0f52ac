/** `harvest prune`: plans, then (unless a dry run) removes, and says what and how much. */
import type { Settings } from '../../config.ts';
import { executePrune, type PruneOutcome } from '../../run/prune/execute.ts';
import { type PrunePlan, planPrune } from '../../run/prune/plan.ts';
import { describeRule, type RetentionRule } from '../../run/prune/select.ts';
import { openStore } from '../../store/index.ts';
import { printMigration } from '../migration-notice.ts';
import { sayReadOnlyFolder } from '../read-only-notice.ts';
import { formatBytes } from './media.ts';

export interface PruneFlags {
  pipeline: string;
  keepRuns?: number;
  olderThan?: { ms: number; text: string };
  dryRun?: boolean;
  json?: boolean;
}

export async function prune(settings: Settings, flags: PruneFlags): Promise<void> {
  const rule: RetentionRule =
    flags.keepRuns !== undefined
      ? { keepRuns: flags.keepRuns }
      : { olderThanMs: flags.olderThan?.ms ?? 0 };
  const dryRun = flags.dryRun === true;
  const store = dryRun
    ? openStore(settings.dbPath, { readonly: true, onReadOnlyFolder: sayReadOnlyFolder })
    : openStore(settings.dbPath, { mustExist: true, onMigrate: printMigration });
  try {
    const plan = planPrune(store, flags.pipeline, rule, Date.now());
    const outcome = dryRun
      ? undefined
      : await executePrune(store, plan, { dataDir: settings.dataDir });
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(pruneJson(plan, dryRun, outcome), null, 2)}\n`);
      return;
    }
    process.stdout.write(pruneText(plan, describeRule(rule, flags.olderThan?.text), outcome));
  } finally {
    store.close();
  }
}

function pruneJson(plan: PrunePlan, dryRun: boolean, outcome: PruneOutcome | undefined) {
  return {
    pipeline: plan.pipelineName,
    dryRun,
    rule: plan.rule,
    runs: plan.runs.map((r) => r.runId),
    kept: plan.kept,
    alreadyPruned: plan.alreadyPruned,
    skipped: plan.skipped,
    planned: plan.totals,
    ...(outcome ? { removed: outcome } : {}),
  };
}

const n = (value: number) => value.toLocaleString('en-US');

/** The plan's figures, then (after a real prune) what was removed and given back. */
export function pruneText(
  plan: PrunePlan,
  rule: string,
  outcome: PruneOutcome | undefined,
): string {
  const t = plan.totals;
  const verb = outcome ? 'removed' : 'would remove (dry run: nothing changed)';
  const lines = [
    `${plan.pipelineName}: ${rule}: ${n(t.runs)} run${t.runs === 1 ? '' : 's'} to prune, ${n(plan.kept)} kept, ${n(plan.alreadyPruned)} pruned before`,
    ...plan.skipped.map((s) => `  left whole: ${s.runId}, ${s.reason}`),
    ...plan.runs.map(
      (r) =>
        `  prune ${r.runId}: ${n(r.results)} results, ${n(r.calls)} calls, ${n(r.media)} media rows`,
    ),
    `${verb}:`,
    `  results      ${n(t.results)}`,
    `  calls        ${n(t.calls)} (their ${n(t.creditsUsed)} credits stay in cost reports)`,
    `  media rows   ${n(t.media)}`,
    `  media files  ${n(t.files)} (${formatBytes(t.fileBytes)}) no kept row points at`,
    `  contents     ${n(t.contents)} (${formatBytes(t.contentBytes)}) no kept result references`,
    `  database     about ${formatBytes(t.databaseBytes)} of rows`,
  ];
  if (outcome) lines.push(...outcomeLines(outcome));
  return `${lines.join('\n')}\n`;
}

function outcomeLines(o: PruneOutcome): string[] {
  const d = o.database;
  const lines = o.stopped.map((s) => `  not pruned after all: ${s.runId}, ${s.reason}`);
  if (o.missingFiles > 0) lines.push(`  ${n(o.missingFiles)} media files were already missing`);
  lines.push(`  longest write lock held: ${n(Math.round(o.longestStepMs))} ms`);
  const freed = formatBytes(d.freedPages * d.pageSize);
  lines.push(
    d.incremental
      ? `database file ${formatBytes(d.fileBytesBefore)} -> ${formatBytes(d.fileBytesAfter)} (${freed} freed, ${n(d.vacuumedPages)} pages given back)`
      : `database: ${freed} freed inside the file, reused by later writes; the file does not shrink: it was made before incremental vacuum (docs/storage.md#pruning-old-runs)`,
  );
  return lines;
}
