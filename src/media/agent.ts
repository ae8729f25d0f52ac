/**
 * The undici Agent of media downloads, with the address rule (address.ts) applied where the
 * connection is made: host names are resolved by a lookup that drops refused addresses, so the
 * socket can only connect to an address that passed (DNS cannot answer differently between a
 * check and the connection: there is only one resolution, the one connected to). IP-literal
 * hosts, which need no lookup, are judged before connecting; and the address a socket really
 * reached is judged again before it carries a request.
 */
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

/** A download refused because its host resolved to an address in a refused range. */
export class AddressRefusedError extends Error {
  readonly code = 'MEDIA_ADDRESS_REFUSED';
  readonly range: AddressRange;
  constructor(host: string, address: string, range: AddressRange) {
    super(
      `refused to connect to ${host} (${address}): ${range} addresses are not media hosts; allow the host with HARVEST_MEDIA_ALLOW_HOSTS if it is yours`,
    );
    this.name = 'AddressRefusedError';
    this.range = range;
  }
}

export interface GuardedAgentOptions {
  /** Host names exempt from the address rule (the API's own host, allowed hosts). */
  allowedHosts: readonly string[];
  /** Resolver of host names. Default the system resolver. */
  resolve?: Resolve;
  /** Longest wait for a connection, in ms. Default 10000. */
  connectTimeoutMs?: number;
  /** Connections kept per origin. Default 16. */
  connections?: number;
}

function refusal(host: string, address: string): AddressRefusedError | undefined {
  const verdict = judgeAddress(address);
  return verdict.allowed ? undefined : new AddressRefusedError(host, address, verdict.range);
}

/** A `net.connect` lookup that only ever answers with allowed addresses. */
export function guardedLookup(resolve: Resolve, allowedHosts: readonly string[]): LookupFunction {
  return (hostname, options, callback) => {
    const exempt = hostAllowed(hostname, allowedHosts);
    resolve(hostname).then(
      (all) => {
        const wanted = options.family ? all.filter((a) => a.family === options.family) : all;
        const ok = exempt ? wanted : wanted.filter((a) => judgeAddress(a.address).allowed);
        const first = ok[0];
        if (!first) {
          const address = wanted[0]?.address ?? all[0]?.address ?? '(none)';
          const error =
            refusal(hostname, address) ??
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

export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const allowed = options.allowedHosts;
  const base = buildConnector({
    timeout: options.connectTimeoutMs ?? 10_000,
    lookup: guardedLookup(options.resolve ?? systemResolve, allowed),
  });
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname;
    const exempt = hostAllowed(host, allowed);
    if (!exempt && isIP(host)) {
      const refused = refusal(host, host);
      if (refused) {
        callback(refused, null);
        return;
      }
    }
    base(opts, (...args) => {
      const [error, socket] = args;
      if (error) {
        callback(error, null);
        return;
      }
      const reached = socket.remoteAddress;
      const refused = exempt || reached === undefined ? undefined : refusal(host, reached);
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
