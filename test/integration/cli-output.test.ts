/**
 * What commands print, through the real binary: with `--json`, JSON on stdout whatever happens
 * (a report written to a file, a forced stop); a bad setting in one line; number flags in plain
 * decimal digits only (exit 2 otherwise).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../src/queue/connection.ts';
import { harvestKeys } from '../../src/queue/names.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { runCli, spawnCli, useCliFixture } from '../helpers/cli.ts';
import { deletePrefix, freshPrefix, REDIS_URL } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const GOOD = 'name: good\nsearches:\n  - query: web data\n    limit: 1\n';

const cli = useCliFixture('cli-output');
/** Prefixes of the tests' own runs beside the fixture's. */
const prefixes: string[] = [];
const redis = createRedis(REDIS_URL, 'client');
afterAll(async () => {
  for (const p of prefixes) await deletePrefix(p);
  await redis.quit();
});

describe('--json prints JSON on stdout whatever happens', () => {
  it('report costs --json --out FILE: the report in the file, a summary on stdout', async () => {
    const db = path.join(cli.dir, 'costs', 'harvest.db');
    const run = await runCli(['run', cli.file('good.yaml', GOOD), '--local'], cli.settings, {
      HARVEST_DB: db,
    });
    expect(run.code).toBe(0);
    const out = path.join(cli.dir, 'costs.json');
    const r = await runCli(['report', 'costs', '--json', '--out', out], cli.settings, {
      HARVEST_DB: db,
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(readFileSync(out, 'utf8')).by).toBe('pipeline');
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, out, format: 'json' });
    // Without --json, one line says where the report went.
    const csv = path.join(cli.dir, 'costs.csv');
    const plain = await runCli(['report', 'costs', '--out', csv], cli.settings, { HARVEST_DB: db });
    expect(plain.stdout).toBe(`wrote the csv cost report to ${csv}\n`);
    expect(existsSync(csv)).toBe(true);
  });

  it('a second Ctrl-C of run --local --json exits 4 and prints a FORCED_STOP error', async () => {
    const slow = await startSandbox({ port: 0, latency: { minMs: 3000, maxMs: 3000 } });
    const prefix = freshPrefix();
    prefixes.push(prefix);
    try {
      const child = spawnCli(
        ['run', path.resolve('pipelines/bulk-dataset.yaml'), '--local', '--json'],
        cli.settings,
        {
          HARVEST_API_URL: slow.url,
          HARVEST_PREFIX: prefix,
          HARVEST_DB: path.join(cli.dir, 'forced', 'harvest.db'),
        },
      );
      // Calls in flight (in the journal: each takes 3 s) when the first Ctrl-C lands, so the
      // second lands while they are being waited for, not after the summary.
      const inflight = harvestKeys(prefix).inflight;
      await waitFor('calls in flight', () => redis.hlen(inflight), {
        until: (n) => n > 0,
        timeoutMs: 30_000,
        intervalMs: 50,
      });
      child.child.kill('SIGINT');
      await waitFor('the first stop said', () => child.stderr().includes('stopping run'), {
        intervalMs: 50,
      });
      child.child.kill('SIGINT');
      expect(await child.exited).toBe(4);
      const answer = JSON.parse(child.stdout()) as { ok: boolean; error: Record<string, unknown> };
      expect(answer.ok).toBe(false);
      expect(answer.error).toMatchObject({ code: 'FORCED_STOP', exitCode: 4 });
      expect(answer.error.message).toMatch(/calls in flight are recorded as lost/);
    } finally {
      await slow.close();
    }
  }, 60_000);
});

describe('one-line messages', () => {
  it('a bad setting is one line naming each variable, and JSON with --json', async () => {
    const r = await runCli(['status', '--json'], cli.settings, {
      HARVEST_QUEUE_WINDOW: 'abc',
      HARVEST_MEDIA_CONCURRENCY: '0x10',
    });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error.code).toBe('SETTINGS_INVALID');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^harvest: invalid environment: .*HARVEST_QUEUE_WINDOW: a whole number.*; .*HARVEST_MEDIA_CONCURRENCY/,
    );
  });
});

describe('number flags: plain decimal digits only', () => {
  it('refuses 0x10, 1e1 and an empty value with exit 2, saying what is expected', async () => {
    const pipeline = cli.file('good.yaml', GOOD);
    for (const args of [
      ['run', pipeline, '--local', '-c', '0x10'],
      ['run', pipeline, '--local', '-c', '1e1'],
      ['status', '-n', '1e1'],
      ['worker', '-c', ''],
      ['worker', '--metrics-port', ''],
      ['worker', '--metrics-port', '0x10'],
      ['worker', '--lock-duration', '3e4'],
      ['plan', pipeline, '--limit', '0x10'],
      ['plan', pipeline, '--limit', ''],
      ['dashboard', '--port', '1e3'],
    ]) {
      const r = await runCli(args, cli.settings);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(/in decimal digits/);
    }
  });
});
