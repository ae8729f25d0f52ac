/**
 * Search workers on other hosts, for real: two `harvest worker --roles search` processes, each
 * in a network namespace of its own made here (a veth pair on its own /30, no other route, so
 * neither the shared Redis on 127.0.0.1 nor anything else of this host is reachable), with the
 * database's folder hidden from them (an empty tmpfs over it in their mount namespace) and a
 * data folder that does not exist. Redis (a redis-server of this test, bound to this side of the
 * veths only) and the sandbox are reached over the veth addresses. This side runs the store
 * role (`harvest worker --roles store`) and `harvest run --wait` without --local.
 *
 * Where namespaces cannot be made (not root, no `ip netns`, no redis-server) the file says why
 * and skips: it never fakes the hosts.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.ts';
import { BIN } from '../helpers/cli.ts';
import {
  createHosts,
  type Host,
  hostsUnavailable,
  netnsInode,
  removeLeftHosts,
  routesOf,
  spawnInHost,
  stopProcess,
  waitForText,
} from '../helpers/hosts.ts';
import { OwnRedis } from '../helpers/own-redis.ts';
import { parsePrometheusText } from '../helpers/prometheus.ts';
import { tempDir } from '../helpers/tmp.ts';

const execFileAsync = promisify(execFile);
const unavailable = await hostsUnavailable();
if (unavailable) console.warn(`many-hosts test skipped: ${unavailable}`);

/** The sandbox counts each team's calls in fixed windows of 2 s, 12 calls each. */
const WINDOW_MS = 2000;
const LIMIT = 12;
/** Search slots per worker host. */
const SLOTS = 6;
const METRICS_PORT = 9464;
const KEY = 'fc-sandbox';
/** A call starts a few ms before its request reaches the sandbox. */
const SLACK_MS = 50;

interface SearchHost {
  host: Host;
  child: ChildProcess;
  log: () => string;
}

/** Undo steps, last first; each runs whatever the others did. */
const undos: (() => unknown)[] = [];
let dbDir = '';
let workerDir = '';
let prefix = '';
let redis: OwnRedis;
let sandbox: RunningSandbox;
let sandboxPort = 0;
let hosts: Host[] = [];
const searchHosts: SearchHost[] = [];

/** Captures a child's output (which also keeps its pipes drained). */
function capture(child: ChildProcess): () => string {
  let text = '';
  const add = (chunk: Buffer) => {
    text = (text + String(chunk)).slice(-20_000);
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  return () => text;
}

/** The environment of a harvest process on this side: Redis and the API over the first veth. */
function localEnv(): NodeJS.ProcessEnv {
  const via = hosts[0]!.localAddr;
  return {
    PATH: process.env.PATH,
    HARVEST_API_URL: `http://${via}:${sandboxPort}`,
    HARVEST_API_KEY: KEY,
    REDIS_URL: redis.url(via),
    HARVEST_PREFIX: prefix,
    HARVEST_DATA_DIR: dbDir,
    HARVEST_DB: path.join(dbDir, 'harvest.db'),
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
  };
}

/** Runs a harvest command on this side; one that has not ended within 90 s is stopped. */
async function runHarvest(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...localEnv(), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  undos.push(() => stopProcess(child, 2000));
  const output = capture(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  return { code: code as number | null, output: output() };
}

function pipeline(name: string, count: number, extra = ''): string {
  const file = path.join(dbDir, `${name}.yaml`);
  const n = Array.from({ length: count }, (_, i) => i).join(', ');
  writeFileSync(
    file,
    `name: ${name}\n${extra}run:\n  maxAttempts: 3\nsearches:\n  - matrix:\n      n: [${n}]\n    query: "${name} {n}"\n    limit: 1\n`,
  );
  return file;
}

function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(path.join(dbDir, 'harvest.db'), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

function one<T>(sql: string, ...params: unknown[]): T {
  return query<T>(sql, ...params)[0]!;
}

function latestRun(pipelineName: string): string {
  return one<{ id: string }>(
    `SELECT r.id FROM runs r JOIN pipelines p ON p.id = r.pipeline_id
     WHERE p.name = ? ORDER BY r.created_at DESC LIMIT 1`,
    pipelineName,
  ).id;
}

const team = (): { calls: Record<string, number>; creditsCharged: number } =>
  sandbox.ledger().teams.sandbox ?? { calls: {}, creditsCharged: 0 };

/** API calls a worker made, by outcome, from its Prometheus metrics (read from this side). */
async function callsOf(host: Host): Promise<Record<string, number>> {
  const res = await fetch(`http://${host.addr}:${METRICS_PORT}/metrics`);
  const family = parsePrometheusText(await res.text()).get('harvest_api_calls_total');
  const byOutcome: Record<string, number> = {};
  for (const s of family?.samples ?? []) {
    const outcome = s.labels.outcome ?? '?';
    byOutcome[outcome] = (byOutcome[outcome] ?? 0) + s.value;
  }
  return byOutcome;
}

const sum = (values: Record<string, number>) => Object.values(values).reduce((a, b) => a + b, 0);

describe.skipIf(unavailable !== undefined)(
  `search workers on other hosts${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    beforeAll(async () => {
      const db = tempDir('harvest-hosts-db');
      undos.push(db.remove);
      dbDir = db.dir;
      const worker = tempDir('harvest-hosts-worker');
      undos.push(worker.remove);
      workerDir = worker.dir;
      prefix = `test-${randomUUID()}`;

      const made = await createHosts(2);
      undos.push(async () => {
        const problems = await made.remove();
        if (problems.length > 0) console.warn(`removing namespaces: ${problems.join('; ')}`);
      });
      hosts = made.hosts;

      redis = await OwnRedis.start({ bind: hosts.map((h) => h.localAddr) });
      undos.push(() => redis.stop());
      sandbox = await startSandbox({
        port: 0,
        host: '0.0.0.0',
        rateLimitPerMinute: LIMIT,
        rateLimitMode: 'fixed',
        rateLimitWindowMs: WINDOW_MS,
      });
      undos.push(() => sandbox.close());
      sandboxPort = Number(new URL(sandbox.url).port);

      // This side: the store role, the only writer of the database.
      const store = spawn(process.execPath, [BIN, 'worker', '--roles', 'store'], {
        env: localEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      undos.push(() => stopProcess(store));
      await waitForText(store, /worker started/, 30_000);
      capture(store);

      for (const host of hosts) {
        const child = spawnInHost(
          host,
          [
            process.execPath,
            BIN,
            'worker',
            '--roles',
            'search',
            '-c',
            String(SLOTS),
            '--metrics-port',
            String(METRICS_PORT),
            '--metrics-host',
            host.addr,
          ],
          {
            env: {
              PATH: process.env.PATH,
              HARVEST_API_URL: `http://${host.localAddr}:${sandboxPort}`,
              HARVEST_API_KEY: KEY,
              REDIS_URL: redis.url(host.localAddr),
              HARVEST_PREFIX: prefix,
              // A folder that does not exist: a search worker must not make it.
              HARVEST_DATA_DIR: path.join(workerDir, 'data'),
              HARVEST_DB: path.join(workerDir, 'data', 'harvest.db'),
              LOG_LEVEL: 'info',
              LOG_FORMAT: 'json',
            },
            cwd: process.cwd(),
            hide: [dbDir],
          },
        );
        // SIGTERM first: calls in flight finish and their records reach the store queue.
        undos.push(() => stopProcess(child));
        const log = capture(child);
        await waitForText(child, /worker started/, 30_000);
        searchHosts.push({ host, child, log });
      }
    }, 90_000);

    afterAll(async () => {
      while (undos.length > 0) {
        try {
          await undos.pop()?.();
        } catch (error) {
          console.warn(`many-hosts cleanup: ${(error as Error).message}`);
        }
      }
    }, 60_000);

    it('a run across both hosts: every task stored once, credits equal to the ledger, one wave of 429s', async () => {
      const N = 60;
      const { code, output } = await runHarvest(['run', pipeline('hosts-all', N), '--wait']);
      expect(code, output).toBe(0);
      const runId = latestRun('hosts-all');

      expect(query('SELECT status FROM runs WHERE id = ?', runId)).toEqual([
        { status: 'completed' },
      ]);
      expect(
        one(
          'SELECT count(*) AS n, sum(status = ?) AS done FROM tasks WHERE run_id = ?',
          'done',
          runId,
        ),
      ).toEqual({ n: N, done: N });
      // Once each: one successful call and one result per task, and the service answered 200
      // exactly that often (no task was called twice).
      expect(
        one(
          `SELECT count(*) AS calls, count(DISTINCT task_key) AS tasks FROM calls
           WHERE run_id = ? AND outcome = 'ok'`,
          runId,
        ),
      ).toEqual({ calls: N, tasks: N });
      // One result per task that got one (limit 1; the sandbox answers 5% of queries with none,
      // which cost nothing), never two.
      const { paid } = one<{ paid: number }>(
        'SELECT count(*) AS paid FROM tasks WHERE run_id = ? AND credits_used > 0',
        runId,
      );
      expect(paid).toBeGreaterThan(N / 2);
      expect(
        one(
          'SELECT count(*) AS results, count(DISTINCT task_key) AS tasks FROM results WHERE run_id = ?',
          runId,
        ),
      ).toEqual({ results: paid, tasks: paid });
      const ledger = team();
      expect(ledger.calls['200']).toBe(N);
      const { credits } = one<{ credits: number }>(
        'SELECT sum(credits_used) AS credits FROM calls WHERE run_id = ?',
        runId,
      );
      expect(credits).toBeGreaterThan(0);
      expect(credits).toBe(ledger.creditsCharged);

      // The rate limit held across the hosts: the 429s are the calls in flight when the first
      // one came (at most every slot of both hosts), all in the first window; afterwards the
      // hosts shared each window's allowance through Redis and met no 429.
      const refused = query<{ startedAt: number; attempt: number }>(
        `SELECT started_at AS startedAt, attempt FROM calls
         WHERE run_id = ? AND outcome = 'RATE_LIMITED' ORDER BY started_at`,
        runId,
      );
      expect(refused.length).toBe(ledger.calls['429'] ?? 0);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.length).toBeLessThanOrEqual(2 * SLOTS);
      const firstWindowEnd = (Math.floor(refused[0]!.startedAt / WINDOW_MS) + 1) * WINDOW_MS;
      for (const call of refused) expect(call.startedAt).toBeLessThan(firstWindowEnd + SLACK_MS);
      // A 429 spends no attempt.
      expect(one('SELECT max(attempt) AS attempt FROM calls WHERE run_id = ?', runId)).toEqual({
        attempt: 1,
      });

      // Both hosts called the API, and between them made every call the service answered.
      const byHost = await Promise.all(hosts.map(callsOf));
      for (const calls of byHost) expect(calls.ok ?? 0).toBeGreaterThan(0);
      expect(byHost.reduce((a, calls) => a + sum(calls), 0)).toBe(sum(ledger.calls));
    }, 120_000);

    it('a pipeline budget stops the run across both hosts, to the credit', async () => {
      const before = team();
      const N = 40;
      // A one-result search costs 2 credits (an empty answer 0): the budget pays for 10 of them.
      const file = pipeline('hosts-budget', N, 'budget:\n  maxCredits: 20\n');
      const { code, output } = await runHarvest(['run', file, '--wait']);
      expect(code, output).toBe(1);
      const runId = latestRun('hosts-budget');

      // Every task was either called (done) or refused before its call (failed); the paid calls
      // add up to the budget exactly, as each reserves its worst case (2) and settles what it cost.
      const tasks = query<{ status: string; code: string | null; n: number }>(
        `SELECT status, last_error_code AS code, count(*) AS n FROM tasks WHERE run_id = ?
         GROUP BY status, code ORDER BY status`,
        runId,
      );
      const done = tasks.find((t) => t.status === 'done')?.n ?? 0;
      expect(done).toBeGreaterThanOrEqual(10);
      expect(tasks).toEqual([
        { status: 'done', code: null, n: done },
        { status: 'failed', code: 'BUDGET_EXCEEDED', n: N - done },
      ]);
      expect(
        one('SELECT count(*) AS n FROM calls WHERE run_id = ? AND outcome = ?', runId, 'ok'),
      ).toEqual({ n: done });
      const after = team();
      const charged = after.creditsCharged - before.creditsCharged;
      expect(charged).toBe(20);
      expect((after.calls['200'] ?? 0) - (before.calls['200'] ?? 0)).toBe(done);
      expect(
        one<{ credits: number }>(
          'SELECT sum(credits_used) AS credits FROM calls WHERE run_id = ?',
          runId,
        ).credits,
      ).toBe(charged);
      // The window learned in the first run still holds: no 429 in this one.
      expect(
        one(
          'SELECT count(*) AS n FROM calls WHERE run_id = ? AND outcome = ?',
          runId,
          'RATE_LIMITED',
        ),
      ).toEqual({ n: 0 });
    }, 120_000);

    it('the workers were on their own hosts, without the database', async () => {
      const own = await netnsInode({ pid: process.pid });
      for (const { host, child, log } of searchHosts) {
        const pid = child.pid!;
        expect(child.exitCode, log()).toBeNull();
        // In the namespace made for it, whose only route is its own /30.
        expect(await netnsInode({ pid })).toBe(await netnsInode({ ns: host.ns }));
        expect(await netnsInode({ pid })).not.toBe(own);
        const routes = await routesOf(host);
        expect(routes).toHaveLength(1);
        expect(routes[0]).toMatch(new RegExp(`^${host.addr.replace(/\.2$/, '.0')}/30 `));
        // The database's folder, seen from the worker: empty (this side sees the database).
        expect(readdirSync(dbDir)).toContain('harvest.db');
        expect(readdirSync(`/proc/${pid}/root${dbDir}`)).toEqual([]);
        // No SQLite file open, and no data folder made.
        const open = readdirSync(`/proc/${pid}/fd`).map((fd) => {
          try {
            return readlinkSync(`/proc/${pid}/fd/${fd}`);
          } catch {
            return '';
          }
        });
        expect(
          open.filter((f) => /\.db(-wal|-shm|-journal)?$/.test(f) || f.startsWith(dbDir)),
        ).toEqual([]);
      }
      expect(existsSync(path.join(workerDir, 'data'))).toBe(false);
      // Redis saw both hosts connect from their own addresses.
      const client = new Redis(redis.url(hosts[0]!.localAddr), { maxRetriesPerRequest: 2 });
      const clients = String(await client.client('LIST'));
      client.disconnect();
      for (const host of hosts) expect(clients).toContain(`addr=${host.addr}:`);
    });

    it('namespaces left by a test killed before its cleanup are removed by the next one', async () => {
      // A process that has ended: what a killed test leaves is named after it.
      const gone = spawnSync(
        process.execPath,
        ['-e', 'process.stdout.write(String(process.pid))'],
        {
          encoding: 'utf8',
        },
      );
      const left = `hv${gone.stdout}x1n1`;
      await execFileAsync('ip', ['netns', 'add', left]);
      const live = `hv${process.pid}x9n1`;
      await execFileAsync('ip', ['netns', 'add', live]);
      try {
        expect(await removeLeftHosts()).toBeGreaterThanOrEqual(1);
        const names = (await execFileAsync('ip', ['netns', 'list'])).stdout;
        expect(names).not.toContain(left);
        // This process still runs: its namespaces stay.
        expect(names).toContain(live);
      } finally {
        await execFileAsync('ip', ['netns', 'del', left]).catch(() => undefined);
        await execFileAsync('ip', ['netns', 'del', live]).catch(() => undefined);
      }
    });
  },
);
