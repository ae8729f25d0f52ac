/**
 * Shared pieces of the runner benchmarks (goodput, overhead, memory): a sandbox in a child
 * process, a Redis prefix of their own (`bench-<uuid>`, removed with SCAN+DEL), temp folders,
 * benchmark pipelines, RSS sampling from /proc, and the final block of figures.
 *
 * Everything a benchmark starts is registered with `cleanup` and undone on exit, on error and
 * on SIGINT/SIGTERM.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Redis } from 'ioredis';
import { loadSettings, type Settings } from '../../src/config.ts';
import type { LedgerSnapshot } from '../../src/sandbox/index.ts';
import { deletePrefix } from '../helpers/redis.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const HARVEST_BIN = path.join(ROOT, 'bin', 'harvest.js');
export { deletePrefix };
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const SANDBOX_KEY = 'fc-sandbox';

// ---------------------------------------------------------------------------------------------
// Cleanup

type Undo = () => void | Promise<void>;
const undos: Undo[] = [];
const children = new Set<ChildProcess>();
let signalsInstalled = false;

/** Registers something to undo when the benchmark ends (last registered, first undone). */
export function onCleanup(undo: Undo): void {
  installSignals();
  undos.push(undo);
}

/** Runs every registered undo once, newest first; errors are printed, not thrown. */
export async function cleanup(): Promise<void> {
  while (undos.length > 0) {
    const undo = undos.pop()!;
    try {
      await undo();
    } catch (error) {
      console.error(`cleanup: ${(error as Error).message}`);
    }
  }
}

function installSignals(): void {
  if (signalsInstalled) return;
  signalsInstalled = true;
  // Children are killed even when the benchmark dies without running its cleanup.
  process.on('exit', () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
}

/** Registers `close` for cleanup and returns it, made idempotent, to call earlier by hand. */
export function closer(close: () => void | Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  const run = () => {
    closing ??= Promise.resolve().then(close);
    return closing;
  };
  onCleanup(run);
  return run;
}

/**
 * Runs a benchmark's main function with cleanup afterwards. The exit code is 0 whatever the
 * verdict (benchmarks report, they do not gate); 1 only when the benchmark itself broke.
 */
export function runBench(main: () => Promise<void>): void {
  installSignals();
  main()
    .then(
      () => 0,
      (error: unknown) => {
        console.error(error);
        return 1;
      },
    )
    .then(async (code) => {
      await cleanup();
      process.exit(code);
    });
}

// ---------------------------------------------------------------------------------------------
// Redis, folders, settings

/** A fresh Redis prefix, whose keys are removed at cleanup. */
export function benchPrefix(): string {
  const prefix = `bench-${randomUUID()}`;
  onCleanup(async () => {
    await deletePrefix(prefix);
  });
  return prefix;
}

/** A temporary folder, removed at cleanup. */
export function benchDir(label: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), `harvest-bench-${label}-`));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The environment harvest reads, for a child process or for `loadSettings`. */
export function benchEnv(input: {
  apiUrl: string;
  prefix: string;
  dir: string;
  logLevel?: string;
}): NodeJS.ProcessEnv {
  return {
    HARVEST_API_URL: input.apiUrl,
    HARVEST_API_KEY: SANDBOX_KEY,
    HARVEST_DATA_DIR: input.dir,
    HARVEST_DB: path.join(input.dir, 'harvest.db'),
    HARVEST_PREFIX: input.prefix,
    REDIS_URL,
    LOG_LEVEL: input.logLevel ?? 'silent',
  };
}

export function benchSettings(input: { apiUrl: string; prefix: string; dir: string }): Settings {
  return loadSettings(benchEnv(input));
}

// ---------------------------------------------------------------------------------------------
// Child processes

/** Spawns `node <args>` in the repository, tracked so it is killed at the end. */
export function spawnNode(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; stdout?: 'pipe' | 'inherit' | 'ignore' } = {},
): ChildProcess {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', options.stdout ?? 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  onCleanup(() => stopChild(child));
  return child;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Resolves with the first match of `pattern` in a stream's text, or rejects on exit. */
export function waitForOutput(
  child: ChildProcess,
  stream: 'stdout' | 'stderr',
  pattern: RegExp,
  timeoutMs = 30_000,
): Promise<RegExpExecArray> {
  const source = child[stream];
  if (!source) return Promise.reject(new Error(`${stream} is not piped`));
  source.setEncoding('utf8');
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => done(new Error(`no ${pattern} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onData = (chunk: string) => {
      text += chunk;
      const m = pattern.exec(text);
      if (m) done(undefined, m);
      else if (text.length > 65_536) text = text.slice(-8192);
    };
    const onExit = (code: number | null) =>
      done(new Error(`process exited (${code}) before printing ${pattern}:\n${text}`));
    function done(error: Error | undefined, m?: RegExpExecArray) {
      clearTimeout(timer);
      source!.off('data', onData);
      child.off('exit', onExit);
      // Keep draining, so a chatty child never blocks on a full pipe.
      source!.resume();
      if (error) reject(error);
      else resolve(m!);
    }
    source.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Passes a child's stderr through, each line prefixed, so failures are visible. */
export function forwardStderr(child: ChildProcess, label: string): void {
  child.stderr?.setEncoding('utf8');
  let rest = '';
  child.stderr?.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) process.stderr.write(`  [${label}] ${line}\n`);
  });
}

export interface SandboxChild {
  url: string;
  child: ChildProcess;
  /** The sandbox's ledger, read over HTTP. */
  ledger(): Promise<LedgerSnapshot>;
  /**
   * A full garbage collection in the sandbox now (POST /_sandbox/gc); false when it runs
   * without --expose-gc (`startSandboxChild`'s `exposeGc`).
   */
  gc(): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * `harvest sandbox --port 0 <flags>` as its own process, so it has an event loop of its own.
 * `exposeGc` starts it with `--expose-gc`, so that `gc()` collects.
 */
export async function startSandboxChild(
  flags: string[] = [],
  options: { exposeGc?: boolean } = {},
): Promise<SandboxChild> {
  const node = options.exposeGc ? ['--expose-gc'] : [];
  const child = spawnNode([...node, HARVEST_BIN, 'sandbox', '--port', '0', ...flags]);
  forwardStderr(child, 'sandbox');
  const m = await waitForOutput(child, 'stdout', /listening on (http:\/\/\S+)/);
  const url = m[1]!;
  return {
    url,
    child,
    async ledger() {
      const res = await fetch(`${url}/_sandbox/ledger`);
      if (!res.ok) throw new Error(`GET /_sandbox/ledger answered ${res.status}`);
      return (await res.json()) as LedgerSnapshot;
    },
    async gc() {
      const res = await fetch(`${url}/_sandbox/gc`, { method: 'POST' });
      if (!res.ok) throw new Error(`POST /_sandbox/gc answered ${res.status}`);
      return ((await res.json()) as { collected: boolean }).collected;
    },
    stop: () => stopChild(child),
  };
}

let ownGc: (() => void) | undefined;

/**
 * A full garbage collection in this process now. Benchmarks run under tsx, without
 * --expose-gc: the flag is set at run time and `gc` taken from a fresh context, which V8 then
 * gives it.
 */
export function collectGarbage(): void {
  if (!ownGc) {
    v8.setFlagsFromString('--expose-gc');
    ownGc = runInNewContext('gc') as () => void;
  }
  ownGc();
}

/** Resident set size of a process in kB (VmRSS of /proc/<pid>/status); undefined once gone. */
export function readRssKb(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CPU time (user + system) in ms from /proc: of process `pid`, or of its thread `tid` when given.
 * Undefined once gone.
 */
export function readCpuMs(pid: number, tid?: number): number | undefined {
  try {
    const file = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`;
    const stat = readFileSync(file, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux platform Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time of the Redis server, in ms (INFO cpu: used_cpu_user + used_cpu_sys). */
export async function readRedisCpuMs(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) =>
    Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

// ---------------------------------------------------------------------------------------------
// Pipelines

/**
 * A pipeline of `count` plain searches ("bench <n>", limit 1). Up to 10,000 it uses one matrix
 * key; above, two keys whose product is `count` (the file stays small).
 */
export function matrixPipeline(input: {
  name: string;
  count: number;
  concurrency?: number;
  maxAttempts?: number;
  rateLimitPerMinute?: number;
  /** Results per search. Default 1. */
  limit?: number;
  /** Scrape formats of every search (`markdown`, `rawHtml`, ...). Default none. */
  formats?: readonly string[];
}): string {
  const run = [
    `  concurrency: ${input.concurrency ?? 32}`,
    `  maxAttempts: ${input.maxAttempts ?? 10}`,
    ...(input.rateLimitPerMinute ? [`  rateLimitPerMinute: ${input.rateLimitPerMinute}`] : []),
  ];
  const range = (n: number) => Array.from({ length: n }, (_, i) => i).join(', ');
  let matrix: string[];
  let query: string;
  if (input.count <= 10_000) {
    matrix = [`      n: [${range(input.count)}]`];
    query = 'bench {n}';
  } else {
    const a = largestDivisorUpTo(input.count, Math.ceil(Math.sqrt(input.count)));
    matrix = [`      a: [${range(input.count / a)}]`, `      b: [${range(a)}]`];
    query = 'bench {a} {b}';
  }
  return [
    `name: ${input.name}`,
    'run:',
    ...run,
    'searches:',
    '  - matrix:',
    ...matrix,
    `    query: "${query}"`,
    `    limit: ${input.limit ?? 1}`,
    ...(input.formats?.length
      ? ['    scrapeOptions:', `      formats: [${input.formats.join(', ')}]`]
      : []),
    '',
  ].join('\n');
}

function largestDivisorUpTo(n: number, max: number): number {
  for (let d = max; d > 1; d--) if (n % d === 0) return d;
  throw new Error(`${n} has no divisor <= ${max}: pick a count with two similar factors`);
}

// ---------------------------------------------------------------------------------------------
// Time and figures

/**
 * The sandbox's fixed windows are aligned to the clock (one-minute windows: wall-clock
 * minutes): starting every client at the same moment of a window makes runs comparable. Waits
 * until `offsetMs` past the start of a window of `windowMs`; returns how far past it is.
 */
export async function alignToWindow(offsetMs: number, windowMs = 60_000): Promise<number> {
  const now = Date.now();
  const target = Math.floor(now / windowMs) * windowMs + offsetMs;
  const at = target > now ? target : target + windowMs;
  await sleep(at - now);
  return Date.now() % windowMs;
}

export function sumCalls(calls: Record<string, number> | undefined): number {
  return Object.values(calls ?? {}).reduce((a, b) => a + b, 0);
}

/** The median; of an even count, the mean of the two middle values. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function fixed(n: number, digits = 2): string {
  return Number.isFinite(n) ? n.toFixed(digits) : String(n);
}

export function pct(n: number, digits = 1): string {
  return `${(n * 100).toFixed(digits)}%`;
}

export function mb(kb: number | undefined): string {
  return kb === undefined ? '-' : `${(kb / 1024).toFixed(1)} MB`;
}

export type Row = readonly [label: string, ...values: string[]];

/** Prints a titled block of aligned rows. */
export function printBlock(title: string, rows: readonly Row[]): void {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  console.log(`\n== ${title} ==`);
  for (const row of rows) {
    console.log(
      row
        .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
        .join('   '),
    );
  }
}

/** `PASS` or `FAIL`, with the figure and its target. */
export function verdict(pass: boolean, what: string): string {
  return `${pass ? 'PASS' : 'FAIL'}  ${what}`;
}
