/**
 * Who may reach the dashboard, decided before it starts. Pure.
 *
 * | bound to                                   | credentials set | result                   |
 * |--------------------------------------------|-----------------|--------------------------|
 * | loopback (127.0.0.0/8, ::1, localhost)     | no              | open to this host's users |
 * | loopback                                   | yes             | basic auth               |
 * | anything else (0.0.0.0, ::, an address, a name) | yes        | basic auth               |
 * | anything else                              | no              | refused: UsageError      |
 *
 * Beyond loopback the password must have 16 characters at least (as HARVEST_NOTIFY_SECRET):
 * basic auth is all that stands between the network and the queues. Guesses are slowed per
 * client address (throttle.ts).
 *
 * An open dashboard answers only requests whose `Host` (and `Origin`, when sent) are loopback
 * names (`fromThisHost`): a web page that makes its name resolve to 127.0.0.1 gets nothing.
 */
import { BlockList, isIP } from 'node:net';
import { UsageError } from '../errors.ts';

export interface BasicAuthCredentials {
  readonly user: string;
  readonly password: string;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * True for addresses only this host can reach. A host name other than `localhost` counts as
 * reachable from elsewhere: what it resolves to can change.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (bare.toLowerCase() === 'localhost') return true;
  const family = isIP(bare);
  if (family === 4) return LOOPBACK.check(bare, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
    return mapped ? LOOPBACK.check(mapped[1]!, 'ipv4') : LOOPBACK.check(bare, 'ipv6');
  }
  return false;
}

/** Characters a dashboard password needs at least when served beyond loopback. */
export const MIN_PASSWORD_CHARS = 16;

/**
 * The credentials the dashboard asks for, or undefined when it may stay open (loopback and
 * none configured). Throws UsageError for a non-loopback address without credentials, or with
 * a password shorter than MIN_PASSWORD_CHARS.
 */
export function dashboardCredentials(
  host: string,
  configured: BasicAuthCredentials | undefined,
): BasicAuthCredentials | undefined {
  const beyondLoopback = !isLoopbackHost(host);
  if (configured) {
    // Counted in characters (code points), as a person typing it would.
    if (beyondLoopback && [...configured.password].length < MIN_PASSWORD_CHARS) {
      throw new UsageError(
        `refusing to serve the dashboard on ${host} with a short password: HARVEST_DASHBOARD_PASSWORD needs ${MIN_PASSWORD_CHARS} characters at least beyond loopback (a random one: \`openssl rand -hex 16\`)`,
      );
    }
    return configured;
  }
  if (!beyondLoopback) return undefined;
  throw new UsageError(
    `refusing to serve the dashboard on ${host} without a password: set HARVEST_DASHBOARD_USER and HARVEST_DASHBOARD_PASSWORD, or keep the default --host 127.0.0.1`,
  );
}

/** The host name of a `Host` header or an `Origin` (`name[:port]`, `http://name[:port]`). */
function hostnameOf(value: string): string | undefined {
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname;
  } catch {
    return undefined;
  }
}

/**
 * Whether a request to a dashboard open to this host's users (loopback, no password) really
 * comes from this host's users. A web page elsewhere can make its own name resolve to
 * 127.0.0.1 (DNS rebinding) and then talk to the dashboard as a same-origin page: its requests
 * carry its name in `Host`, and any request another site's page makes carries that site in
 * `Origin`. Both must be loopback names.
 */
export function fromThisHost(headers: { host?: string; origin?: string }): boolean {
  const host = headers.host === undefined ? undefined : hostnameOf(headers.host);
  if (host === undefined || !isLoopbackHost(host)) return false;
  if (headers.origin === undefined) return true;
  // An opaque origin ("null", a sandboxed page) names no host: refused with the rest.
  const origin = hostnameOf(headers.origin);
  return origin !== undefined && isLoopbackHost(origin);
}
