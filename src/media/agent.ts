/**
 * The undici Agent of media downloads (and of webhooks, with their own allow-list and wording),
 * with the address rule (address.ts) applied where the connection is made: host names are
 * resolved by a lookup that drops refused addresses, so the socket can only connect to an
 * address that passed (DNS cannot answer differently between a check and the connection: there
 * is only one resolution, the one connected to). IP-literal hosts, which need no lookup, are
 * judged before connecting; and the address a socket really reached is judged again before it
 * carries a request. A host exempt on the connection's port skips all three. */
import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { type AddressRange, hostAllowed, judgeAddress } from './address.ts';

/** One resolved address, as `dns.lookup(..., { all: true })` gives them. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has. Default: the system resolver (`dns.lookup`). */
export type Resolve = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    );
  });

/** What a refusal says: whose hosts these are, and the setting that allows one. */
export interface RefusalWording {
  /** Stable error code. Default `MEDIA_ADDRESS_REFUSED`. */
  code: string;
  /** What the refused addresses are not, e.g. `media hosts`. */
  what: string;
  /** The allow-list setting, e.g. `HARVEST_MEDIA_ALLOW_HOSTS`. */
  setting: string;
}

const MEDIA_WORDING: RefusalWording = {
  code: 'MEDIA_ADDRESS_REFUSED',
  what: 'media hosts',
  setting: 'HARVEST_MEDIA_ALLOW_HOSTS',
};

/** A connection refused because its host resolved to an address in a refused range. */
export class AddressRefusedError extends Error {
  readonly code: string;
  readonly range: AddressRange;
  constructor(host: string, address: string, range: AddressRange, wording = MEDIA_WORDING) {
    super(
      `refused to connect to ${host} (${address}): ${range} addresses are not ${wording.what}; allow the host with ${wording.setting} if it is yours`,
    );
    this.name = 'AddressRefusedError';
    this.code = wording.code;
    this.range = range;
  }
}

export interface GuardedAgentOptions {
  /**
   * Hosts exempt from the address rule (address.ts `hostAllowed`): `name`, `*.suffix`, an IP
   * literal, each on any port or on the one it names (`127.0.0.1:3002`: the API's own origin).
   */
  allowedHosts: readonly string[];
  /** Resolver of host names. Default the system resolver. */
  resolve?: Resolve;
  /** Longest wait for a connection, in ms. Default 10000. */
  connectTimeoutMs?: number;
  /** Connections kept per origin. Default 16. */
  connections?: number;
  /** What a refusal says. Default the media downloads' wording. */
  wording?: RefusalWording;
}

function refusal(
  host: string,
  address: string,
  wording: RefusalWording,
): AddressRefusedError | undefined {
  const verdict = judgeAddress(address);
  return verdict.allowed
    ? undefined
    : new AddressRefusedError(host, address, verdict.range, wording);
}

/**
 * A `net.connect` lookup that answers with the addresses of a name; when `guarded`, only with
 * those the address rule allows (an error naming the first refused one when none is left).
 */
export function guardedLookup(
  resolve: Resolve,
  guarded = true,
  wording = MEDIA_WORDING,
): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (all) => {
        const wanted = options.family ? all.filter((a) => a.family === options.family) : all;
        const ok = guarded ? wanted.filter((a) => judgeAddress(a.address).allowed) : wanted;
        const first = ok[0];
        if (!first) {
          const address = wanted[0]?.address ?? all[0]?.address ?? '(none)';
          const error =
            refusal(hostname, address, wording) ??
            Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
          callback(error as NodeJS.ErrnoException, '', 0);
          return;
        }
        if (options.all) callback(null, ok);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

/** The port a connection goes to: the URL's, else its scheme's default (as undici does). */
function portOf(opts: { port?: string | number | undefined; protocol?: string }): number {
  const given = Number(opts.port);
  if (opts.port !== undefined && opts.port !== '' && Number.isInteger(given)) return given;
  return opts.protocol === 'https:' ? 443 : 80;
}

export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const allowed = options.allowedHosts;
  const wording = options.wording ?? MEDIA_WORDING;
  const resolve = options.resolve ?? systemResolve;
  const timeout = options.connectTimeoutMs ?? 10_000;
  // Exemption is by host and port, which a lookup does not see: the connector picks.
  const guarded = buildConnector({ timeout, lookup: guardedLookup(resolve, true, wording) });
  const exempted = buildConnector({ timeout, lookup: guardedLookup(resolve, false, wording) });
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname;
    const exempt = hostAllowed(host, allowed, portOf(opts));
    if (!exempt && isIP(host)) {
      const refused = refusal(host, host, wording);
      if (refused) {
        callback(refused, null);
        return;
      }
    }
    (exempt ? exempted : guarded)(opts, (...args) => {
      const [error, socket] = args;
      if (error) {
        callback(error, null);
        return;
      }
      const reached = socket.remoteAddress;
      const refused = exempt || reached === undefined ? undefined : refusal(host, reached, wording);
      if (refused) {
        socket.destroy();
        callback(refused, null);
        return;
      }
      callback(null, socket);
    });
  };
  return new Agent({ connect, connections: options.connections ?? 16 });
}
