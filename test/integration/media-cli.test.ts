/**
 * `harvest media` and `harvest media verify` as a user runs them, on a database a real run
 * filled: counts, JSON, and exit codes (0 all good, 1 a file missing or corrupt, 2 no such run).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, harvestEnv, startHarness } from '../helpers/harness.ts';

const BIN = path.resolve('bin/harvest.js');

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function harvest(harness: Harness, ...args: string[]) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: harvestEnv(harness),
    encoding: 'utf8',
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

it('lists and verifies saved media; a missing or changed file makes verify exit 1', async () => {
  h = await startHarness();
  await h.startPool({ roles: ['search', 'store', 'media'] });
  const file = h.writePipeline(
    'cli',
    'name: it-media-cli\nsearches:\n  - query: "media cli"\n    limit: 4\n    scrapeOptions:\n      formats: [screenshot, audio]\nmedia:\n  screenshot: true\n  audio: true\n',
  );
  const { runId } = await startRun(h.runtime, file, { logger: h.logger });
  await waitForRun(h.runtime, runId, { pollMs: 50, waitForMedia: true });
  const saved = h.runtime.store.media.ofRun(runId);
  expect(saved.length).toBeGreaterThan(0);

  const listing = harvest(h, 'media', runId);
  expect(listing.code).toBe(0);
  expect(listing.stdout).toContain(`media of run ${runId}`);
  expect(listing.stdout).toMatch(/ {2}screenshot +0 +\d+ +0 +0\n/);
  const json = JSON.parse(harvest(h, 'media', runId, '--json').stdout) as {
    total: Record<string, number>;
    files: number;
  };
  expect(json.total.saved).toBe(saved.length);

  const ok = harvest(h, 'media', 'verify', '--json');
  expect(ok.code).toBe(0);
  expect(JSON.parse(ok.stdout)).toMatchObject({ problems: [], orphans: { files: 0 } });

  // A stored file no saved row points at: listed, without failing verify.
  const root = h.runtime.store.savedFiles(runId)[0]!.path.split('/')[0]!;
  const sha = createHash('sha256').update('orphan').digest('hex');
  const orphan = `${root}/${sha.slice(0, 2)}/${sha}.png`;
  fs.mkdirSync(path.dirname(path.join(h.dir, orphan)), { recursive: true });
  fs.writeFileSync(path.join(h.dir, orphan), 'orphan');
  const withOrphan = harvest(h, 'media', 'verify');
  expect(withOrphan.code).toBe(0);
  expect(withOrphan.stdout).toContain('1 stored files (6 B) that no saved row points at');
  expect(withOrphan.stdout).toContain(`  orphan  ${orphan}\n`);
  expect(JSON.parse(harvest(h, 'media', 'verify', '--json').stdout).orphans).toEqual({
    files: 1,
    bytes: 6,
    paths: [{ path: orphan, bytes: 6 }],
  });
  // Of one run, files of other runs are not its business.
  expect(harvest(h, 'media', 'verify', runId).stdout).not.toContain('orphan');
  fs.rmSync(path.join(h.dir, orphan));

  const [first, second] = h.runtime.store.savedFiles(runId);
  fs.appendFileSync(path.join(h.dir, first!.path), 'changed');
  fs.rmSync(path.join(h.dir, second!.path));
  const bad = harvest(h, 'media', 'verify', runId);
  expect(bad.code).toBe(1);
  expect(bad.stdout).toContain('2 missing or corrupt');
  expect(bad.stdout).toContain(`corrupt ${first!.path}`);
  expect(bad.stdout).toContain(`missing ${second!.path}: no such file`);

  const unknown = harvest(h, 'media', 'no-such-run');
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('no run no-such-run');
  const status = harvest(h, 'status', runId);
  expect(status.stdout).toContain(`  media    saved ${saved.length}/${saved.length}`);
}, 60_000);
