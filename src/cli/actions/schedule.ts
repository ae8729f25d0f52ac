/**
 * What `harvest schedule apply|ls|rm` do, loaded only when they run: read and validate the
 * pipeline files, plan the changes (src/schedule/plan.ts), carry them out on the `runs` queue's
 * job schedulers, and print them.
 */

import fs from 'node:fs';
import path from 'node:path';
import type { Queue } from 'bullmq';
import { parse as parseYaml } from 'yaml';
import type { Settings } from '../../config.ts';
import { HarvestError, UsageError } from '../../errors.ts';
import { maskUrlSecrets } from '../../log.ts';
import { assertRedisReachable, createRedis } from '../../queue/connection.ts';
import { loadValidPipeline } from '../../run/start.ts';
import {
  type AppliedPipeline,
  appliedPipeline,
  duplicateNames,
  planScheduleChanges,
  type ScheduleAction,
} from '../../schedule/plan.ts';
import {
  applyScheduleActions,
  openRunsQueue,
  readSchedules,
  removeSchedule,
  type ScheduleInfo,
} from '../../schedule/schedulers.ts';
import { DEFAULT_TZ, formatInZone, isoInZone, upcomingTimes } from '../../schedule/times.ts';
import { openStore, type TickRow } from '../../store/index.ts';
import { resolvePipelinePaths } from '../commands/validate.ts';
import { EXIT } from '../exit-codes.ts';
import { terminalLines } from '../terminal-text.ts';

/** Names, paths and reasons come from files and Redis: their control characters are escaped. */
function print(text: string): void {
  process.stdout.write(`${terminalLines(text)}\n`);
}

/** The runs queue, for the duration of `use`. */
async function withRunsQueue<T>(settings: Settings, use: (q: Queue) => Promise<T>): Promise<T> {
  await assertRedisReachable(settings.redisUrl);
  const redis = createRedis(settings.redisUrl, 'client');
  const queue = openRunsQueue(redis, settings.queuePrefix);
  try {
    return await use(queue);
  } finally {
    await queue.close().catch(() => {});
    await redis.quit().catch(() => {});
  }
}

/** Every file, validated; all problems of all files in one error, before anything changes. */
async function readPipelines(paths: readonly string[]): Promise<AppliedPipeline[]> {
  const applied: AppliedPipeline[] = [];
  const problems: string[] = [];
  for (const file of await resolvePipelinePaths(paths)) {
    try {
      const { pipeline, text } = await loadValidPipeline(file);
      applied.push(appliedPipeline(path.resolve(file), pipeline, text));
    } catch (error) {
      if (!(error instanceof HarvestError)) throw error;
      problems.push(error.message);
    }
  }
  if (problems.length > 0) {
    throw new HarvestError('PIPELINE_INVALID', `nothing applied:\n${problems.join('\n')}`, {
      exitCode: EXIT.BAD_INPUT,
    });
  }
  const dups = [...duplicateNames(applied)].map(([n, files]) => `${n}: ${files.join(', ')}`);
  if (dups.length > 0) {
    throw new UsageError(
      `nothing applied: a pipeline name is in several files:\n  ${dups.join('\n  ')}`,
    );
  }
  return applied;
}

export interface ApplyOptions {
  prune?: boolean;
  dryRun?: boolean;
  json?: boolean;
}

export interface ListOptions {
  json?: boolean;
  next: number;
}

export async function applyCommand(
  settings: Settings,
  paths: readonly string[],
  opts: ApplyOptions,
): Promise<void> {
  const pipelines = await readPipelines(paths);
  const { actions, after } = await withRunsQueue(settings, async (queue) => {
    const planned = planScheduleChanges(pipelines, await readSchedules(queue), {
      prune: opts.prune ?? false,
    });
    if (!opts.dryRun) await applyScheduleActions(queue, planned);
    return { actions: planned, after: await readSchedules(queue) };
  });
  const next = new Map(after.map((s) => [s.name, s.next]));
  const nowMs = Date.now();
  const width = Math.max(0, ...actions.map((a) => a.name.length));
  // A dry run changed nothing: a changed schedule's next tick is its new cron's, not the
  // scheduler's still in Redis.
  const nextOf = (a: ScheduleAction) =>
    opts.dryRun && a.kind !== 'unchanged' ? null : (next.get(a.name) ?? null);
  const rows = actions.map((a) => describeAction(a, nextOf(a), nowMs, width));
  const notifying = pipelines.some((p) => p.schedule && notifyOf(p.schedule.yamlText));
  if (notifying && !settings.notifySecret) {
    process.stderr.write(
      'warning: a pipeline has schedule.notify, and HARVEST_NOTIFY_SECRET is not set here: the workers with the runs role need it, or nothing is sent\n',
    );
  }
  if (opts.json)
    return print(JSON.stringify({ dryRun: opts.dryRun ?? false, actions: rows }, null, 2));
  if (opts.dryRun) print('dry run: nothing changed');
  for (const r of rows) print(r.line);
}

function describeAction(a: ScheduleAction, nextMs: number | null, nowMs: number, width: number) {
  const verb = {
    create: 'created',
    update: 'updated',
    unchanged: 'unchanged',
    remove: 'removed',
    unscheduled: '-',
  }[a.kind];
  const base = { action: a.kind, name: a.name };
  const head = `${verb.padEnd(9)} ${a.name.padEnd(width)}`;
  if (a.kind === 'remove') {
    const why =
      a.why === 'pruned' ? 'pruned: no such pipeline among the files' : `${a.file} has no schedule`;
    return { ...base, why: a.why, line: `${head}  (${why})` };
  }
  if (a.kind === 'unscheduled') {
    return { ...base, file: a.file, line: `${head}  (no schedule)` };
  }
  const { cron, tz, file } = a.schedule;
  const [first] = upcomingTimes(cron, tz, nextMs, 1, nowMs);
  const when = first === undefined ? '' : `  next ${formatInZone(first, tz)}`;
  return {
    ...base,
    file,
    cron,
    tz,
    next: first === undefined ? null : isoInZone(first, tz),
    line: `${head}  ${cron} (${tz})${when}`,
  };
}

/**
 * `schedule.notify` of a pipeline text, for display (the text was validated when applied): its
 * query values and credentials masked, as they may be the receiver's secret.
 */
function notifyOf(yamlText: string | undefined): string | undefined {
  if (!yamlText) return undefined;
  try {
    const doc = parseYaml(yamlText) as { schedule?: { notify?: unknown } } | null;
    const notify = doc?.schedule?.notify;
    return typeof notify === 'string' ? maskUrlSecrets(notify) : undefined;
  } catch {
    return undefined;
  }
}

/** The last tick of each pipeline, when this host has the database. */
function lastTicks(settings: Settings, names: readonly string[]): Map<string, TickRow> {
  const last = new Map<string, TickRow>();
  if (names.length === 0 || !fs.existsSync(settings.dbPath)) return last;
  try {
    const store = openStore(settings.dbPath, { readonly: true });
    try {
      for (const name of names) {
        const [tick] = store.ticks.list(name, 1);
        if (tick) last.set(name, tick);
      }
    } finally {
      store.close();
    }
  } catch {
    // An older or locked database: the schedules are still worth listing.
  }
  return last;
}

export async function listCommand(settings: Settings, opts: ListOptions): Promise<void> {
  const schedules = await withRunsQueue(settings, readSchedules);
  const ticks = lastTicks(
    settings,
    schedules.map((s) => s.name),
  );
  const nowMs = Date.now();
  const rows = schedules.map((s) =>
    describeSchedule(s, ticks.get(s.name) ?? null, opts.next, nowMs),
  );
  if (opts.json)
    return print(
      JSON.stringify(
        rows.map(({ lines: _, ...r }) => r),
        null,
        2,
      ),
    );
  if (rows.length === 0) return print('no schedules (add one with `harvest schedule apply FILE`)');
  print(rows.flatMap((r) => r.lines).join('\n'));
}

export function describeSchedule(
  s: ScheduleInfo,
  lastTick: TickRow | null,
  count: number,
  nowMs: number,
) {
  const tz = s.tz ?? DEFAULT_TZ;
  // Missed ticks kept by a re-apply come first: they run once a worker takes them.
  const upcoming = s.cron ? upcomingTimes(s.cron, tz, s.next, count, nowMs) : [];
  const times = [...new Set([...s.missed, ...upcoming])].slice(0, count);
  const notify = notifyOf(s.yamlText) ?? null;
  const lines = [`${s.name}  ${s.cron ?? '?'}  ${tz}${s.file ? `  ${s.file}` : ''}`];
  times.forEach((t, i) => {
    const overdue =
      t < nowMs - 1000 ? '  (due: no worker with the runs role has taken it yet)' : '';
    lines.push(`  ${i === 0 ? 'next  ' : '      '}${formatInZone(t, tz)}${overdue}`);
  });
  if (notify) lines.push(`  notify ${notify}`);
  if (lastTick) {
    const what =
      lastTick.outcome === 'skipped'
        ? `skipped: ${lastTick.reason}`
        : `${lastTick.outcome}${lastTick.runId ? ` run ${lastTick.runId}` : ''}${lastTick.reason && lastTick.outcome === 'failed' ? `: ${lastTick.reason}` : ''}`;
    lines.push(`  last  ${formatInZone(lastTick.dueAt, tz)}  ${what}`);
  }
  return {
    name: s.name,
    cron: s.cron ?? null,
    tz,
    file: s.file ?? null,
    pipelineHash: s.hash ?? null,
    notify,
    next: times.map((t) => ({ at: new Date(t).toISOString(), local: isoInZone(t, tz) })),
    lastTick,
    lines,
  };
}

export async function removeCommand(
  settings: Settings,
  name: string,
  opts: { json?: boolean },
): Promise<void> {
  const removed = await withRunsQueue(settings, (queue) => removeSchedule(queue, name));
  if (!removed) {
    throw new HarvestError(
      'SCHEDULE_NOT_FOUND',
      `no schedule named ${name} (see \`harvest schedule ls\`)`,
      {
        exitCode: EXIT.BAD_INPUT,
      },
    );
  }
  if (opts.json) return print(JSON.stringify({ removed: name }));
  print(`removed the schedule of ${name}; its runs so far are kept`);
}
