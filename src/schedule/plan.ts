/**
 * What `harvest schedule apply` changes, decided purely from the pipeline files given and the
 * job schedulers in Redis (one per pipeline, named after it):
 *
 * | pipeline file                   | scheduler in Redis            | action                     |
 * |---------------------------------|-------------------------------|----------------------------|
 * | has `schedule`                  | none                          | `create`                   |
 * | has `schedule`                  | same cron, tz and file hash   | `unchanged`                |
 * | has `schedule`                  | differs                       | `update`                   |
 * | no `schedule`                   | exists                        | `remove` (`no-schedule`)   |
 * | no `schedule`                   | none                          | `unscheduled` (nothing)    |
 * | (no file of that name)          | exists, with `--prune`        | `remove` (`pruned`)        |
 * | (no file of that name)          | exists, without `--prune`     | kept, not listed           |
 */

import type { Pipeline } from '../pipeline/index.ts';
import { pipelineTextHash } from '../pipeline/keys.ts';
import { DEFAULT_TZ } from './times.ts';

export interface DesiredSchedule {
  name: string;
  cron: string;
  /** IANA time zone (DEFAULT_TZ when the file names none). */
  tz: string;
  /** sha256 of the file's text. */
  hash: string;
  yamlText: string;
  file: string;
}

/** One pipeline file given to `apply`: its schedule, or undefined when it has none. */
export interface AppliedPipeline {
  name: string;
  file: string;
  schedule: DesiredSchedule | undefined;
}

export interface ExistingSchedule {
  name: string;
  cron: string | undefined;
  tz: string | undefined;
  /** The hash of the pipeline text in the scheduler's job template. */
  hash: string | undefined;
}

export type ScheduleAction =
  | { kind: 'create' | 'update' | 'unchanged'; name: string; schedule: DesiredSchedule }
  | { kind: 'remove'; name: string; why: 'no-schedule' | 'pruned'; file?: string }
  | { kind: 'unscheduled'; name: string; file: string };

/** What `apply` wants of one validated pipeline file (`file` as it should be shown). */
export function appliedPipeline(file: string, pipeline: Pipeline, text: string): AppliedPipeline {
  const s = pipeline.schedule;
  const { name } = pipeline;
  const schedule = s && {
    name,
    cron: s.cron,
    tz: s.tz ?? DEFAULT_TZ,
    hash: pipelineTextHash(text),
    yamlText: text,
    file,
  };
  return { name, file, schedule };
}

/** The pipelines' names that appear in more than one file, with those files. */
export function duplicateNames(pipelines: readonly AppliedPipeline[]): Map<string, string[]> {
  const files = new Map<string, string[]>();
  for (const p of pipelines) files.set(p.name, [...(files.get(p.name) ?? []), p.file]);
  return new Map([...files].filter(([, list]) => list.length > 1));
}

export function planScheduleChanges(
  pipelines: readonly AppliedPipeline[],
  existing: readonly ExistingSchedule[],
  options: { prune: boolean },
): ScheduleAction[] {
  const current = new Map(existing.map((e) => [e.name, e]));
  const actions: ScheduleAction[] = [];
  for (const p of pipelines) {
    const found = current.get(p.name);
    if (!p.schedule) {
      actions.push(
        found
          ? { kind: 'remove', name: p.name, why: 'no-schedule', file: p.file }
          : { kind: 'unscheduled', name: p.name, file: p.file },
      );
      continue;
    }
    const s = p.schedule;
    const same = found && found.cron === s.cron && found.tz === s.tz && found.hash === s.hash;
    actions.push({
      kind: !found ? 'create' : same ? 'unchanged' : 'update',
      name: p.name,
      schedule: s,
    });
  }
  if (options.prune) {
    const named = new Set(pipelines.map((p) => p.name));
    for (const e of existing) {
      if (!named.has(e.name)) actions.push({ kind: 'remove', name: e.name, why: 'pruned' });
    }
  }
  return actions.sort((a, b) => a.name.localeCompare(b.name));
}
