/**
 * `harvest worker` logs: human-readable lines on a terminal (a pseudo-terminal from
 * util-linux `script`), JSON lines into a pipe. A store-only worker needs no API key. A Redis
 * that restarts empty under a busy worker is said in one line each way, not with a library
 * stack trace per job in hand (a redis-server of the test's own, never the shared one).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createRedis } from '../../src/queue/connection.ts';
import { harvestKeys } from '../../src/queue/names.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { runCli, spawnCli } from '../helpers/cli.ts';
import { OwnRedis } from '../helpers/own-redis.ts';
import { deletePrefix, freshPrefix, REDIS_URL } from '../helpers/redis.ts';
import { testSettings } from '../helpers/settings.ts';
import { tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../helpers/wait.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const defer = useCleanup();

function workerEnv(setup?: (dataDir: string) => void): NodeJS.ProcessEnv {
  const tmp = tempDir('harvest-logs');
  defer(() => tmp.remove());
  setup?.(tmp.dir);
  const prefix = freshPrefix();
  defer(() => deletePrefix(prefix));
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    REDIS_URL,
    HARVEST_PREFIX: prefix,
    HARVEST_DATA_DIR: tmp.dir,
    // a key that must never show, in either format
    HARVEST_API_KEY: 'fc-log-secret-0123456789',
  };
}

/** Collects a child's output until `done` says it has enough, then stops the child. */
function collect(child: ChildProcess, done: (text: string) => boolean): Promise<string> {
  defer(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let text = '';
    const take = (chunk: Buffer) => {
      text += chunk.toString();
      if (done(text)) resolve(text);
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    child.on('error', reject);
    // 'close', not 'exit': output may still be on its way when the process has exited
    child.on('close', () => resolve(text));
  });
}

describe('worker logs', () => {
  it('are human-readable on a terminal', async () => {
    const command = `node bin/harvest.js worker --roles store`;
    // script gives the worker a pseudo-terminal as stdin, stdout and stderr
    const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
      cwd: ROOT,
      env: workerEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const started = await collect(child, (text) => text.includes('worker started'));
    expect(started).toMatch(
      /\[\d\d:\d\d:\d\d\.\d{3}\] .*INFO.* \(harvest\/\d+\): .*worker started/,
    );
    expect(started).toMatch(/roles: \[/);
    expect(started).not.toContain('"level":');
    // Ctrl-C through the terminal: the worker stops gracefully and says so, still pretty
    const stopped = collect(child, (text) => text.includes('worker stopped'));
    child.stdin?.write('\u0003');
    const text = await stopped;
    expect(text).toContain('worker stopped');
    expect(text).not.toContain('fc-log-secret');
  });

  it('are JSON lines into a pipe', async () => {
    const child = spawn(process.execPath, ['bin/harvest.js', 'worker', '--roles', 'store'], {
      cwd: ROOT,
      env: workerEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const text = await collect(child, (t) => t.includes('worker started') && t.endsWith('\n'));
    child.kill('SIGTERM');
    const started = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((record) => record.msg === 'worker started');
    expect(started).toMatchObject({ level: 30, name: 'harvest', roles: ['store'] });
    expect(text).not.toContain('fc-log-secret');
  });

  it('a Ctrl-C while the pool is starting stops it gracefully', async () => {
    // A database of an older schema: the worker says it upgrades it while starting, which is
    // the moment to send the signal.
    const env = workerEnv((dir) => {
      const raw = new Sqlite(path.join(dir, 'harvest.db'));
      for (const sql of MIGRATIONS.slice(0, 4)) raw.exec(sql);
      raw.pragma('user_version = 4');
      raw.close();
    });
    const child = spawn(process.execPath, ['bin/harvest.js', 'worker', '--roles', 'store'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<[number | null, string | null]>((resolve) =>
      child.on('exit', (code, signal) => resolve([code, signal])),
    );
    let signalled = false;
    const text = await collect(child, (t) => {
      if (!signalled && t.includes('upgrading')) {
        signalled = true;
        child.kill('SIGINT');
      }
      return false;
    });
    expect(signalled).toBe(true);
    expect(await exited).toEqual([0, null]);
    expect(text).toContain('"msg":"worker stopped"');
  });
});

describe('worker logs when Redis restarts empty', () => {
  it('one line each way, not a stack trace per job in hand', async () => {
    // Calls long enough to be in hand while Redis restarts, and to end once it is back.
    const sandbox = await startSandbox({ port: 0, latency: { minMs: 4000, maxMs: 4000 } });
    defer(() => sandbox.close());
    const tmp = tempDir('harvest-logs-restart');
    defer(() => tmp.remove());
    const redis = await OwnRedis.start({ dir: tmp.dir });
    defer(() => redis.stop());
    const prefix = freshPrefix();
    const settings = testSettings({ dir: tmp.dir, prefix, apiUrl: sandbox.url });
    const env = { REDIS_URL: redis.url(), LOG_LEVEL: 'info', LOG_FORMAT: 'json' };
    const pipeline = (name: string) => {
      const file = path.join(tmp.dir, `${name}.yaml`);
      writeFileSync(
        file,
        `name: ${name}\nsearches:\n  - query: "${name} {n}"\n    limit: 1\n    matrix:\n      n: [1, 2, 3, 4]\n`,
      );
      return file;
    };
    expect((await runCli(['run', pipeline('busy')], settings, env)).code).toBe(0);
    const worker = spawnCli(['worker', '-c', '4'], settings, env);
    defer(() => worker.child.kill('SIGKILL'));
    const client = createRedis(redis.url(), 'client');
    client.on('error', () => {});
    defer(() => client.disconnect());
    const inflight = harvestKeys(prefix).inflight;
    await waitFor('4 calls in flight', () => client.hlen(inflight), {
      until: (n) => n === 4,
      timeoutMs: 30_000,
    });
    await redis.kill();
    await redis.start();
    await waitFor('the return said', () => worker.stderr().includes('came back without its data'));
    // The calls in hand end on jobs whose keys are gone. A run enqueued now finishes only once
    // the worker's four slots are free again: by then every one of those jobs has ended.
    const next = await runCli(['run', pipeline('next'), '--wait'], settings, env);
    expect(next.code).toBe(0);
    worker.child.kill('SIGINT');
    expect(await worker.exited).toBe(0);
    const lines = worker
      .stderr()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(lines.filter((l) => l.msg.includes('not reachable'))).toHaveLength(1);
    expect(lines.filter((l) => l.msg.includes('came back without its data'))).toHaveLength(1);
    expect(worker.stderr()).not.toContain('Missing key for job');
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.at(-1)?.msg).toBe('worker stopped');
  }, 90_000);
});
