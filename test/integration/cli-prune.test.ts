/**
 * `harvest prune` as a user runs it: its help, bad flags refused with exit 2, a dry run that
 * prints the figures and leaves the database as it was, then the prune itself.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Settings } from '../../src/config.ts';
import { openStore } from '../../src/store/index.ts';
import { runCli } from '../helpers/cli.ts';
import { FIXTURE_START, seedCostFixture } from '../helpers/cost-fixture.ts';
import { testSettings } from '../helpers/settings.ts';
import { tempDir } from '../helpers/tmp.ts';

const tmp = tempDir('harvest-cli-prune');
let settings: Settings;

beforeAll(() => {
  // Prune needs neither Redis nor the API: nothing is listening at either address.
  settings = testSettings({ dir: tmp.dir, prefix: 'test-unused', apiUrl: 'http://127.0.0.1:9' });
  let now = FIXTURE_START;
  const store = openStore(settings.dbPath, { now: () => now });
  try {
    seedCostFixture(store, (ms) => (now = ms), 4);
  } finally {
    store.close();
  }
});
afterAll(() => tmp.remove());

const prune = (...args: string[]) => runCli(['prune', ...args], settings);

describe('harvest prune', () => {
  it('--help lists the flags and examples', async () => {
    const { code, stdout } = await prune('--help');
    expect(code).toBe(0);
    for (const flag of ['--pipeline', '--keep-runs', '--older-than', '--dry-run', '--json']) {
      expect(stdout).toContain(flag);
    }
    expect(stdout).toContain('harvest prune --pipeline weekly-research --older-than 30d --dry-run');
  });

  it.each([
    [['--pipeline', 'news-watch'], 'exactly one of --keep-runs N or --older-than DURATION'],
    [['--pipeline', 'news-watch', '--keep-runs', '2', '--older-than', '3d'], 'exactly one of'],
    [['--pipeline', 'news-watch', '--older-than', '30 days'], 'a whole number and a unit'],
    [['--pipeline', 'news-watch', '--keep-runs', '0'], 'a whole number >= 1'],
    [['--keep-runs', '2'], "required option '--pipeline <name>'"],
    [['--pipeline', 'nothing-here', '--keep-runs', '2'], 'no runs of pipeline "nothing-here"'],
  ])('refuses %j with exit 2', async (args, message) => {
    const before = fs.statSync(settings.dbPath).mtimeMs;
    const { code, stderr } = await prune(...args);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
    expect(fs.statSync(settings.dbPath).mtimeMs).toBe(before);
  });

  it('a dry run prints what a prune then removes, and changes nothing', async () => {
    // A read-only open leaves SQLite's -shm and an empty -wal beside it; the file is unchanged.
    const files = () => {
      const info = fs.statSync(settings.dbPath);
      return [
        info.size,
        info.mtimeMs,
        fs.statSync(`${settings.dbPath}-wal`, { throwIfNoEntry: false })?.size ?? 0,
      ];
    };
    const before = files();
    const dry = await prune('--pipeline', 'news-watch', '--keep-runs', '1', '--dry-run', '--json');
    expect(dry.code).toBe(0);
    expect(files()).toEqual(before);
    const planned = JSON.parse(dry.stdout);
    expect(planned).toMatchObject({ dryRun: true, kept: 1, alreadyPruned: 0 });
    expect(planned.runs).toHaveLength(3);
    expect(planned.planned.results).toBeGreaterThan(0);

    const text = await prune('--pipeline', 'news-watch', '--keep-runs', '1');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('news-watch: keep the 1 most recent run: 3 runs to prune');
    expect(text.stdout).toContain(
      `results      ${planned.planned.results.toLocaleString('en-US')}`,
    );
    expect(text.stdout).toMatch(/database file .* -> .* freed/);

    // Runs pruned before hold nothing: only the newest one is left to prune.
    const again = await prune(
      '--pipeline',
      'news-watch',
      '--older-than',
      '1d',
      '--dry-run',
      '--json',
    );
    expect(again.code).toBe(0);
    const left = JSON.parse(again.stdout);
    expect(left).toMatchObject({ alreadyPruned: 3, kept: 0 });
    expect(left.runs).toHaveLength(1);
    expect(planned.runs).not.toContain(left.runs[0]);
  });
});
