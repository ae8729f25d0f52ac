import { describe, expect, it } from 'vitest';
import {
  type AppliedPipeline,
  duplicateNames,
  type ExistingSchedule,
  planScheduleChanges,
} from '../../../src/schedule/plan.ts';

function applied(name: string, cron?: string, hash = 'h1', tz = 'UTC'): AppliedPipeline {
  const file = `/p/${name}.yaml`;
  return {
    name,
    file,
    schedule: cron ? { name, cron, tz, hash, yamlText: `name: ${name}`, file } : undefined,
  };
}

const existing = (name: string, cron: string, hash = 'h1', tz = 'UTC'): ExistingSchedule => ({
  name,
  cron,
  tz,
  hash,
});

describe('planScheduleChanges', () => {
  it('creates, keeps, updates and removes by what each file says', () => {
    const actions = planScheduleChanges(
      [
        applied('new', '0 6 * * *'),
        applied('same', '0 6 * * *'),
        applied('recron', '0 7 * * *'),
        applied('rezoned', '0 6 * * *', 'h1', 'Europe/Berlin'),
        applied('edited', '0 6 * * *', 'h2'),
        applied('dropped'),
        applied('never'),
      ],
      [
        existing('same', '0 6 * * *'),
        existing('recron', '0 6 * * *'),
        existing('rezoned', '0 6 * * *'),
        existing('edited', '0 6 * * *'),
        existing('dropped', '0 6 * * *'),
        existing('elsewhere', '0 6 * * *'),
      ],
      { prune: false },
    );
    expect(actions.map((a) => [a.name, a.kind])).toEqual([
      ['dropped', 'remove'],
      ['edited', 'update'],
      ['never', 'unscheduled'],
      ['new', 'create'],
      ['recron', 'update'],
      ['rezoned', 'update'],
      ['same', 'unchanged'],
    ]);
    expect(actions[0]).toMatchObject({ why: 'no-schedule', file: '/p/dropped.yaml' });
  });

  it('with prune, removes the schedules of pipelines not among the files', () => {
    const actions = planScheduleChanges(
      [applied('kept', '0 6 * * *')],
      [existing('kept', '0 6 * * *'), existing('gone', '0 6 * * *')],
      { prune: true },
    );
    expect(actions).toEqual([
      { kind: 'remove', name: 'gone', why: 'pruned' },
      expect.objectContaining({ kind: 'unchanged', name: 'kept' }),
    ]);
  });

  it('finds a pipeline name used by several files', () => {
    const a = applied('twice', '0 6 * * *');
    const b = { ...applied('twice'), file: '/q/twice.yaml' };
    expect(duplicateNames([a, b, applied('once')])).toEqual(
      new Map([['twice', ['/p/twice.yaml', '/q/twice.yaml']]]),
    );
  });
});
