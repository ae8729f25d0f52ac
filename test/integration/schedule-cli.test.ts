/** `harvest schedule apply|ls|rm` as a user runs them: the binary, Redis, a temp folder. */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { Settings } from '../../src/config.ts';
import { createRedis } from '../../src/queue/connection.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { readSchedules } from '../../src/schedule/schedulers.ts';
import { nextTimes } from '../../src/schedule/times.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { runCli } from '../helpers/cli.ts';
import { deletePrefix, freshPrefix } from '../helpers/redis.ts';
import { testSettings } from '../helpers/settings.ts';
import { tempDir } from '../helpers/tmp.ts';

const defer = useCleanup();

function setUp(): { settings: Settings; dir: string; write(name: string, text: string): string } {
  const tmp = tempDir('harvest-schedule');
  defer(() => tmp.remove());
  const prefix = freshPrefix();
  defer(() => deletePrefix(prefix));
  const settings = testSettings({ dir: tmp.dir, prefix, apiUrl: 'http://127.0.0.1:9' });
  const dir = path.join(tmp.dir, 'pipelines');
  mkdirSync(dir);
  return {
    settings,
    dir,
    write(name, text) {
      const file = path.join(dir, `${name}.yaml`);
      writeFileSync(file, text);
      return file;
    },
  };
}

const timed = (cron: string, tz: string) =>
  `name: dr\nsearches:\n  - query: x\nschedule:\n  cron: "${cron}"\n  tz: ${tz}\n`;

const pipeline = (name: string, schedule = '') =>
  `name: ${name}\nsearches:\n  - query: "${name}"\n${schedule}`;

interface Listed {
  name: string;
  cron: string;
  tz: string;
  notify: string | null;
  next: { at: string; local: string }[];
}

/** The schedules in Redis, read directly (cheaper than another process). */
async function names(settings: Settings): Promise<string[]> {
  const redis = createRedis(settings.redisUrl, 'client');
  const queue = new Queue(QUEUES.runs, { connection: redis, prefix: settings.queuePrefix });
  try {
    return (await readSchedules(queue)).map((s) => s.name).sort();
  } finally {
    await queue.close();
    await redis.quit();
  }
}

async function ls(settings: Settings): Promise<Listed[]> {
  const out = await runCli(['schedule', 'ls', '--json', '--next', '4'], settings);
  expect(out.code).toBe(0);
  return JSON.parse(out.stdout) as Listed[];
}

describe('harvest schedule', () => {
  it('applies, lists the next times in each time zone, prunes and removes', async () => {
    const { settings, dir, write } = setUp();
    const weekly = write(
      'weekly',
      pipeline('weekly', 'schedule:\n  cron: "0 6 * * 1"\n  tz: Europe/Berlin\n'),
    );
    write(
      'often',
      pipeline(
        'often',
        'schedule:\n  cron: "*/5 * * * *"\n  notify: https://hooks.example.com/harvest\n',
      ),
    );
    write('manual', pipeline('manual'));

    const applied = await runCli(['schedule', 'apply', dir], settings);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/^created +often +\*\/5 \* \* \* \* \(UTC\) {2}next /m);
    expect(applied.stdout).toMatch(
      /^created +weekly +0 6 \* \* 1 \(Europe\/Berlin\) {2}next Mon /m,
    );
    expect(applied.stdout).toMatch(/^- +manual +\(no schedule\)$/m);
    expect(applied.stderr).toContain('HARVEST_NOTIFY_SECRET is not set');

    const listed = await ls(settings);
    expect(listed.map((s) => s.name).sort()).toEqual(['often', 'weekly']);
    const w = listed.find((s) => s.name === 'weekly') as Listed;
    expect(w).toMatchObject({ cron: '0 6 * * 1', tz: 'Europe/Berlin', notify: null });
    expect(w.next).toHaveLength(4);
    for (const { at, local } of w.next) {
      // Monday 06:00 on Berlin's clock, whatever the offset of the day.
      expect(local).toMatch(/T06:00:00\+0[12]:00$/);
      const day = new Intl.DateTimeFormat('en-US', { timeZone: 'Europe/Berlin', weekday: 'short' });
      expect(day.format(new Date(at))).toBe('Mon');
      expect(Date.parse(at)).toBe(Date.parse(local));
    }
    const weeks = w.next.map((n) => Date.parse(n.at));
    for (let i = 1; i < weeks.length; i++) {
      const gapH = ((weeks[i] as number) - (weeks[i - 1] as number)) / 3600_000;
      expect([167, 168, 169]).toContain(gapH);
    }
    const o = listed.find((s) => s.name === 'often') as Listed;
    expect(o.notify).toBe('https://hooks.example.com/harvest');
    expect(Date.parse(o.next[1]?.at as string) - Date.parse(o.next[0]?.at as string)).toBe(300_000);
    expect(Date.parse(o.next[0]?.at as string)).toBeGreaterThan(Date.now() - 1000);

    // The weekly pipeline is gone from the folder: --prune removes its schedule.
    rmSync(weekly);
    const dry = await runCli(['schedule', 'apply', dir, '--prune', '--dry-run'], settings);
    expect(dry.stdout).toContain('dry run: nothing changed');
    expect(dry.stdout).toMatch(/^removed +weekly +\(pruned: no such pipeline among the files\)$/m);
    // The same file text and schedule: nothing to change.
    expect(dry.stdout).toMatch(/^unchanged +often/m);
    expect(await names(settings)).toEqual(['often', 'weekly']);
    const pruned = await runCli(['schedule', 'apply', dir, '--prune', '--json'], settings);
    expect(pruned.code).toBe(0);
    expect(JSON.parse(pruned.stdout).actions).toContainEqual(
      expect.objectContaining({ action: 'remove', name: 'weekly', why: 'pruned' }),
    );
    expect(await names(settings)).toEqual(['often']);

    const removed = await runCli(['schedule', 'rm', 'often'], settings);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain('removed the schedule of often');
    expect(await names(settings)).toEqual([]);
    const missing = await runCli(['schedule', 'rm', 'often'], settings);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no schedule named often');
  }, 60_000);

  it('applies nothing when a file is invalid or two files share a name', async () => {
    const { settings, dir, write } = setUp();
    write('good', pipeline('good', 'schedule:\n  cron: "0 6 * * *"\n'));
    const bad = write('bad', pipeline('bad', 'schedule:\n  cron: "0 6 * *"\n  tz: Mars/Olympus\n'));
    const invalid = await runCli(['schedule', 'apply', dir], settings);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('nothing applied');
    expect(invalid.stderr).toContain(`${bad}:5:9 schedule.cron`);
    expect(invalid.stderr).toContain('schedule.tz: unknown time zone');
    expect(await names(settings)).toEqual([]);

    write('bad', pipeline('good', 'schedule:\n  cron: "0 7 * * *"\n'));
    const twice = await runCli(['schedule', 'apply', dir], settings);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('a pipeline name is in several files');
    expect(await names(settings)).toEqual([]);
  }, 60_000);

  it('--dry-run of a changed schedule says the next time of its new cron and time zone', async () => {
    const { settings, write } = setUp();
    const file = write('dr', '');
    writeFileSync(file, timed('0 6 * * 1', 'Europe/Berlin'));
    expect((await runCli(['schedule', 'apply', file], settings)).code).toBe(0);

    // The cron and the time zone change: 21:30 every day in New York.
    writeFileSync(file, timed('30 21 * * *', 'America/New_York'));
    const dry = await runCli(['schedule', 'apply', file, '--dry-run', '--json'], settings);
    expect(dry.code).toBe(0);
    const [action] = JSON.parse(dry.stdout).actions;
    expect(action).toMatchObject({ action: 'update', cron: '30 21 * * *' });
    // Not the old scheduler's next time (Monday 06:00 Berlin, shown in New York), a time the
    // new cron never fires at.
    expect(action.next).toMatch(/T21:30:00-0[45]:00$/);

    const real = await runCli(['schedule', 'apply', file, '--json'], settings);
    const [applied] = JSON.parse(real.stdout).actions;
    const expected = nextTimes('30 21 * * *', 'America/New_York', Date.now(), 1)[0] as number;
    expect(Date.parse(applied.next)).toBe(expected);
    expect(action.next).toBe(applied.next);
  }, 60_000);

  it('ls still shows a due tick that re-applying a changed file kept', async () => {
    const { settings, write } = setUp();
    const file = write('dr', '');
    const second = new Date(Date.now() + 5000).getUTCSeconds();
    writeFileSync(file, timed(`${second} * * * * *`, 'UTC'));
    const created = await runCli(['schedule', 'apply', file, '--json'], settings);
    const due = Date.parse(JSON.parse(created.stdout).actions[0].next);
    // A fixed duration: the test is about a tick that fell due (1.5 s ago) with no worker.
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now()) + 1500));
    const before = await runCli(['schedule', 'ls', '--json'], settings);
    const [b] = JSON.parse(before.stdout);
    const dueAt = Date.parse(b.next[0].at);
    expect(dueAt).toBeLessThan(Date.now());
    expect(before.stdout.length).toBeGreaterThan(0);

    // The file changes; the due tick is kept in Redis (missed-tick job) and runs once a worker
    // with the runs role starts.
    writeFileSync(file, `# edited\n${timed(`${second} * * * * *`, 'UTC')}`);
    expect((await runCli(['schedule', 'apply', file], settings)).code).toBe(0);
    const after = await runCli(['schedule', 'ls', '--json'], settings);
    const [a] = JSON.parse(after.stdout);
    expect(a.next.map((n: { at: string }) => Date.parse(n.at))).toContain(dueAt);
  }, 60_000);
});
