/**
 * Other hosts on this machine, for the many-hosts test: Linux network namespaces made with
 * `ip netns`, each joined to this one by a veth pair on its own /30 (10.200.X.0/30: this side
 * .1, the host's side .2), with no other route; a redis-server of the test's own, bound to this
 * side's addresses; and processes started inside a namespace, with chosen folders hidden from
 * them by an empty tmpfs in their own mount namespace (`ip netns exec` gives each one).
 *
 * Needs root and a kernel that allows network namespaces: `hostsUnavailable()` says why not.
 * Names are short (interfaces have at most 15 characters) and unique per call: `hv<pid>x<n>...`,
 * with the pid of the process that made them, so that a later call removes what a test killed
 * before its cleanup left behind (its process is gone).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { promisify } from 'node:util';

const exec = promisify(execFile);

export interface Host {
  /** The namespace's name (`ip netns exec NAME ...`). */
  ns: string;
  /** This side's interface and address: what processes in the namespace connect to. */
  localIf: string;
  localAddr: string;
  /** The namespace's own address, on its end of the veth. */
  addr: string;
}

export interface Hosts {
  hosts: Host[];
  /** Removes every namespace and interface made; safe to call twice, never throws. */
  remove(): Promise<string[]>;
}

async function ip(...args: string[]): Promise<string> {
  const { stdout } = await exec('ip', args, { timeout: 10_000 });
  return stdout;
}

/** Why namespaces cannot be made here, or undefined when they can (a probe is made and removed). */
export async function hostsUnavailable(): Promise<string | undefined> {
  if (process.platform !== 'linux')
    return `network namespaces need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'ip netns needs root (this test runs as a normal user)';
  const probe = `hv${randomBytes(2).toString('hex')}p`;
  try {
    await ip('netns', 'add', probe);
  } catch (error) {
    return `ip netns add failed: ${firstLine(error)}`;
  } finally {
    await ip('netns', 'del', probe).catch(() => undefined);
  }
  try {
    await exec('redis-server', ['--version'], { timeout: 10_000 });
  } catch (error) {
    return `redis-server cannot be started: ${firstLine(error)}`;
  }
  return undefined;
}

function firstLine(error: unknown): string {
  const e = error as { stderr?: string; message?: string };
  return (e.stderr || e.message || String(error)).trim().split('\n')[0] ?? '';
}

/** Third octets of 10.200.X.0/24 already on this machine's interfaces. */
async function usedOctets(): Promise<Set<number>> {
  const used = new Set<number>();
  for (const m of (await ip('-4', '-o', 'addr')).matchAll(/inet 10\.200\.(\d+)\./g)) {
    used.add(Number(m[1]));
  }
  return used;
}

/** Calls of createHosts in this process, for unique names. */
let calls = 0;

/** Namespaces (and their veth pairs) made by processes that no longer run. Returns how many. */
export async function removeLeftHosts(): Promise<number> {
  let removed = 0;
  for (const line of (await ip('netns', 'list').catch(() => '')).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const made = /^hv(\d+)x\d+n\d+$/.exec(name);
    if (!made || isAlive(Number(made[1]))) continue;
    await ip('netns', 'del', name).catch(() => undefined);
    await ip('link', 'del', name.replace(/n(\d+)$/, 'h$1')).catch(() => undefined);
    removed += 1;
  }
  return removed;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Makes `count` namespaces, each with a veth pair on a /30 of its own. */
export async function createHosts(count: number): Promise<Hosts> {
  await removeLeftHosts();
  calls += 1;
  const id = `${process.pid}x${calls}`;
  const made: { ns: string; localIf: string }[] = [];
  const remove = async () => {
    const problems: string[] = [];
    for (const { ns, localIf } of made.splice(0)) {
      // Removing the namespace destroys the veth end inside it, and so the pair; the explicit
      // delete covers a namespace that was never entered.
      await ip('netns', 'del', ns).catch((e: unknown) => problems.push(firstLine(e)));
      await ip('link', 'del', localIf).catch(() => undefined);
    }
    return problems;
  };
  const used = await usedOctets();
  const hosts: Host[] = [];
  try {
    for (let n = 1; n <= count; n++) {
      let octet = 0;
      do octet = 1 + Math.floor(Math.random() * 250);
      while (used.has(octet));
      used.add(octet);
      const host: Host = {
        ns: `hv${id}n${n}`,
        localIf: `hv${id}h${n}`,
        localAddr: `10.200.${octet}.1`,
        addr: `10.200.${octet}.2`,
      };
      const peer = `hv${id}w${n}`;
      await ip('netns', 'add', host.ns);
      made.push(host);
      await ip('link', 'add', host.localIf, 'type', 'veth', 'peer', 'name', peer);
      await ip('link', 'set', peer, 'netns', host.ns);
      await ip('addr', 'add', `${host.localAddr}/30`, 'dev', host.localIf);
      await ip('link', 'set', host.localIf, 'up');
      await ip('netns', 'exec', host.ns, 'ip', 'addr', 'add', `${host.addr}/30`, 'dev', peer);
      await ip('netns', 'exec', host.ns, 'ip', 'link', 'set', peer, 'up');
      await ip('netns', 'exec', host.ns, 'ip', 'link', 'set', 'lo', 'up');
      hosts.push(host);
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return { hosts, remove };
}

/** The namespace's IPv4 routes, one per line (`ip -4 route` inside it). */
export async function routesOf(host: Host): Promise<string[]> {
  const out = await ip('netns', 'exec', host.ns, 'ip', '-4', 'route');
  return out.trim().split('\n').filter(Boolean);
}

/** The inode of a process's network namespace (`/proc/PID/ns/net`), to compare with a host's. */
export async function netnsInode(target: { pid: number } | { ns: string }): Promise<string> {
  const file = 'pid' in target ? `/proc/${target.pid}/ns/net` : `/run/netns/${target.ns}`;
  const { stdout } = await exec('stat', ['-L', '-c', '%i', file]);
  return stdout.trim();
}

/**
 * Starts `command` inside the namespace, with each of `hide` covered by an empty tmpfs in the
 * process's own mount namespace (the rest of the filesystem, the repository included, stays).
 */
export function spawnInHost(
  host: Host,
  command: readonly string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string; hide?: readonly string[] },
): ChildProcess {
  const hide = options.hide ?? [];
  // `$1..$k` are the folders to hide; what follows them is the command, exec'd in place so the
  // pid stays the process's own.
  const script = `${hide.map((_, i) => `mount -t tmpfs -o size=1m hv "$${i + 1}" && `).join('')}shift ${hide.length} && exec "$@"`;
  return spawn('ip', ['netns', 'exec', host.ns, 'sh', '-c', script, 'sh', ...hide, ...command], {
    env: options.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Resolves once `pattern` appears in the child's stdout or stderr; rejects on exit or timeout. */
export function waitForText(
  child: ChildProcess,
  pattern: RegExp,
  timeoutMs: number,
): Promise<string> {
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => finish(new Error(`no ${pattern} within ${timeoutMs} ms:\n${text}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      text += String(chunk);
      if (pattern.test(text)) finish();
    };
    const onExit = (code: number | null) =>
      finish(new Error(`exited (${code}) before ${pattern}:\n${text}`));
    function finish(error?: Error) {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      // Keep draining, so a chatty child never blocks on a full pipe.
      child.stdout?.resume();
      child.stderr?.resume();
      if (error) reject(error);
      else resolve(text);
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
export async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
