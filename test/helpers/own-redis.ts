/**
 * A redis-server of a test's own, for what the shared one on 6379 must never go through: being
 * killed, restarted empty or with its data, asked for a password. Started on a free port, bound
 * to loopback (or to the given addresses), keeping nothing on disk unless `persist` (AOF,
 * fsynced at every write, in `dir`).
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { stopProcess, waitForText } from './hosts.ts';
import { freePort } from './ports.ts';

export interface OwnRedisOptions {
  /** Default: a free port. */
  port?: number;
  /** Addresses it listens on. Default 127.0.0.1. */
  bind?: readonly string[];
  /** `requirepass`. */
  password?: string;
  /** Keep data across a restart (AOF in `dir`). Default false: it restarts empty. */
  persist?: boolean;
  /** Its working folder (the AOF files). Default /tmp. */
  dir?: string;
}

export class OwnRedis {
  readonly port: number;
  #child: ChildProcess | undefined;

  private constructor(
    port: number,
    private readonly options: OwnRedisOptions,
  ) {
    this.port = port;
  }

  /** Starts one and resolves once it accepts connections. */
  static async start(options: OwnRedisOptions = {}): Promise<OwnRedis> {
    const redis = new OwnRedis(options.port ?? (await freePort()), options);
    await redis.start();
    return redis;
  }

  get child(): ChildProcess | undefined {
    return this.#child;
  }

  /** `redis://[:PASSWORD@]ADDR:PORT`, for `addr` (default its first address). */
  url(addr = this.options.bind?.[0] ?? '127.0.0.1'): string {
    const auth = this.options.password ? `:${this.options.password}@` : '';
    return `redis://${auth}${addr}:${this.port}`;
  }

  /** Starts it (again, after `stop` or `kill`). */
  async start(): Promise<void> {
    const o = this.options;
    const args = ['--port', String(this.port), '--bind', ...(o.bind ?? ['127.0.0.1'])];
    args.push('--save', '', '--dir', o.dir ?? '/tmp', '--daemonize', 'no');
    args.push('--protected-mode', 'no');
    if (o.password) args.push('--requirepass', o.password);
    args.push(
      ...(o.persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
    );
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    try {
      await waitForText(child, /Ready to accept connections/, 15_000);
    } catch (error) {
      await this.kill();
      throw error;
    }
  }

  /** SIGTERM (it saves its AOF), then SIGKILL after 5 s; resolves once it has exited. */
  async stop(): Promise<void> {
    if (this.#child) await stopProcess(this.#child, 5000);
  }

  /** SIGKILL: gone at once, as in a crash. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }
}
