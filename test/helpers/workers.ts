/**
 * `harvest worker` processes of a test (the real binary), for what in-process pools cannot show:
 * a worker killed with SIGKILL. Every one still running is killed after each test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach } from 'vitest';
import { BIN } from './cli.ts';
import { type Harness, harvestEnv } from './harness.ts';

export interface WorkerChoice {
  /** `--roles`. Default `search`. */
  roles?: string;
  /** `-c`. Default 8. */
  concurrency?: number;
}

/**
 * Returns a starter of workers on a harness whose jobs come back 1-2 s after the worker dies
 * (`--lock-duration 2000 --stalled-interval 1000`).
 */
export function useWorkerProcesses(): (harness: Harness, choice?: WorkerChoice) => ChildProcess {
  const children = new Set<ChildProcess>();
  afterEach(() => {
    for (const child of children) child.kill('SIGKILL');
    children.clear();
  });
  return (harness, choice = {}) => {
    const args = [BIN, 'worker', '--roles', choice.roles ?? 'search'];
    args.push('-c', String(choice.concurrency ?? 8));
    args.push('--lock-duration', '2000', '--stalled-interval', '1000');
    const child = spawn(process.execPath, args, { env: harvestEnv(harness), stdio: 'ignore' });
    children.add(child);
    child.on('exit', () => children.delete(child));
    return child;
  };
}
