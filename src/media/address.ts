/**
 * Which network addresses a media download may connect to. Pure.
 *
 * A signed URL comes from an API answer, and an answer can point anywhere: at the cloud's
 * metadata service, at a database on the worker's own network, at the worker itself. So every
 * address a download connects to is checked, after DNS resolution (see agent.ts), against:
 *
 * | range                                          | why refused                    |
 * |------------------------------------------------|--------------------------------|
 * | 0.0.0.0/8, ::/128                              | unspecified ("this host")      |
 * | 127.0.0.0/8, ::1/128                           | loopback                       |
 * | 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 | private                      |
 * | 169.254/16, fe80::/10                          | link-local                     |
 * | 100.64/10                                      | carrier-grade NAT              |
 * | 169.254.169.254, 169.254.170.2, 100.100.100.200, 192.0.0.192, fd00:ec2::254 | cloud metadata |
 * | 192.0.0/24, 192.0.2/24, 198.18/15, 198.51.100/24, 203.0.113/24, 240/4, 2001:db8::/32, 100::/64 | reserved |
 * | 224/4, ff00::/8, 255.255.255.255               | multicast, broadcast           |
 *
 * IPv6 forms that carry an IPv4 address (mapped `::ffff:0:0/96`, translated
 * `::ffff:0:0:0/96`, compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by
 * that IPv4 address. Teredo (`2001::/32`) hides its address and is refused; so is local-use
 * NAT64 (`64:ff9b:1::/48`), whose translator is on the local network and whose IPv4 address may
 * sit anywhere in it (as `private`).
 *
 * Exceptions are by host name (and port, when an entry gives one), not address: the API's own
 * host and port (the sandbox, or a self-hosted service) and the hosts a setting allows
 * (`HARVEST_MEDIA_ALLOW_HOSTS`; `HARVEST_NOTIFY_ALLOW_HOSTS` for webhooks).
 */
import { isIP } from 'node:net';

export type AddressRange =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'metadata'
  | 'reserved'
  | 'multicast'
  | 'teredo';

export type AddressVerdict =
  | { allowed: true }
  | { allowed: false; range: AddressRange; address: string };

interface V4Range {
  base: number;
  bits: number;
  range: AddressRange;
}

function v4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return undefined;
    n = n * 256 + Number(part);
  }
  return n;
}

function cidr4(text: string, range: AddressRange): V4Range {
  const [addr, bits] = text.split('/');
  return { base: v4(addr!)!, bits: Number(bits ?? 32), range };
}

/** Most specific first: metadata addresses sit inside link-local and CGNAT. */
const V4_RANGES: readonly V4Range[] = [
  cidr4('169.254.169.254/32', 'metadata'),
  cidr4('169.254.170.2/32', 'metadata'),
  cidr4('100.100.100.200/32', 'metadata'),
  cidr4('192.0.0.192/32', 'metadata'),
  cidr4('0.0.0.0/8', 'unspecified'),
  cidr4('127.0.0.0/8', 'loopback'),
  cidr4('10.0.0.0/8', 'private'),
  cidr4('172.16.0.0/12', 'private'),
  cidr4('192.168.0.0/16', 'private'),
  cidr4('169.254.0.0/16', 'link-local'),
  cidr4('100.64.0.0/10', 'cgnat'),
  cidr4('192.0.0.0/24', 'reserved'),
  cidr4('192.0.2.0/24', 'reserved'),
  cidr4('198.18.0.0/15', 'reserved'),
  cidr4('198.51.100.0/24', 'reserved'),
  cidr4('203.0.113.0/24', 'reserved'),
  cidr4('255.255.255.255/32', 'multicast'),
  cidr4('224.0.0.0/4', 'multicast'),
  cidr4('240.0.0.0/4', 'reserved'),
];

function inV4(n: number, r: V4Range): boolean {
  if (r.bits === 0) return true;
  const shift = 32 - r.bits;
  return Math.floor(n / 2 ** shift) === Math.floor(r.base / 2 ** shift);
}

function judgeV4(n: number): AddressRange | undefined {
  return V4_RANGES.find((r) => inV4(n, r))?.range;
}

/** An IPv6 address as eight 16-bit groups; undefined when malformed. */
export function parseV6(text: string): number[] | undefined {
  let s = text.toLowerCase().replace(/%.*$/, '');
  // A dotted IPv4 tail (`::ffff:1.2.3.4`) becomes two hex groups.
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    const n = v4(s.slice(lastColon + 1));
    if (n === undefined) return undefined;
    s = `${s.slice(0, lastColon + 1)}${Math.floor(n / 65536).toString(16)}:${(n % 65536).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const filler = halves.length === 2 ? 8 - head.length - rest.length : 0;
  if (halves.length === 2 ? filler < 1 : head.length !== 8) return undefined;
  const out: number[] = [];
  for (const g of [...head, ...Array<string>(filler).fill('0'), ...rest]) {
    if (!/^[0-9a-f]{1,4}$/.test(g)) return undefined;
    out.push(Number.parseInt(g, 16));
  }
  return out;
}

const zeros = (g: number[], from: number, to: number) => g.slice(from, to).every((x) => x === 0);
const v4Of = (hi: number, lo: number) => hi * 65536 + lo;

function judgeV6(g: number[]): AddressRange | undefined {
  const [a = 0, b = 0, c = 0, d = 0] = g;
  if (zeros(g, 0, 8)) return 'unspecified';
  if (zeros(g, 0, 7) && g[7] === 1) return 'loopback';
  // IPv4-mapped ::ffff:0:0/96 and IPv4-compatible ::/96 (deprecated) carry an IPv4 address.
  if (zeros(g, 0, 5) && (g[5] === 0xffff || g[5] === 0)) return judgeV4(v4Of(g[6]!, g[7]!));
  // IPv4-translated ::ffff:0:0:0/96 (SIIT) too.
  if (zeros(g, 0, 4) && g[4] === 0xffff && g[5] === 0) return judgeV4(v4Of(g[6]!, g[7]!));
  // NAT64 well-known prefix 64:ff9b::/96.
  if (a === 0x64 && b === 0xff9b && zeros(g, 2, 6)) return judgeV4(v4Of(g[6]!, g[7]!));
  // Local-use NAT64 64:ff9b:1::/48: a translator on the local network.
  if (a === 0x64 && b === 0xff9b && c === 1) return 'private';
  // 6to4 2002::/16: the IPv4 address is in groups 1 and 2.
  if (a === 0x2002) return judgeV4(v4Of(b, c));
  if (a === 0x2001 && b === 0) return 'teredo';
  if (a === 0x2001 && b === 0xdb8) return 'reserved';
  if (a === 0x100 && b === 0 && c === 0 && d === 0) return 'reserved';
  if (a === 0xfd00 && b === 0xec2 && zeros(g, 2, 7) && g[7] === 0x254) return 'metadata';
  if ((a & 0xfe00) === 0xfc00) return 'private';
  if ((a & 0xffc0) === 0xfe80) return 'link-local';
  if ((a & 0xffc0) === 0xfec0) return 'private';
  if ((a & 0xff00) === 0xff00) return 'multicast';
  return undefined;
}

/** Whether a download may connect to `address` (an IPv4 or IPv6 literal). */
export function judgeAddress(address: string): AddressVerdict {
  const family = isIP(address.replace(/%.*$/, ''));
  let range: AddressRange | undefined;
  if (family === 4) range = judgeV4(v4(address)!);
  else if (family === 6) {
    const groups = parseV6(address);
    range = groups ? judgeV6(groups) : 'reserved';
  } else range = 'reserved';
  return range === undefined ? { allowed: true } : { allowed: false, range, address };
}

/** An entry of an allow-list: a host name, `*.suffix` or IP literal, and a port or any. */
export interface AllowEntry {
  host: string;
  /** Undefined: any port. */
  port: number | undefined;
}

/**
 * Reads an allow-list entry: `name`, `*.suffix`, `10.0.0.5`, `::1` (any port), or one of these
 * with a port: `name:8080`, `10.0.0.5:8080`, `[::1]:8080`. A bare IPv6 literal has no port.
 */
export function parseAllowEntry(entry: string): AllowEntry {
  const text = entry.trim();
  const bracketed = /^\[([^\]]*)\](?::(\d{1,5}))?$/.exec(text);
  if (bracketed) return { host: normaliseHost(bracketed[1]!), port: portOf(bracketed[2]) };
  const withPort = /^([^:]+):(\d{1,5})$/.exec(text);
  if (withPort) return { host: normaliseHost(withPort[1]!), port: portOf(withPort[2]) };
  return { host: normaliseHost(text), port: undefined };
}

const portOf = (text: string | undefined) => (text === undefined ? undefined : Number(text));

/**
 * The allow-list entry of one origin, host and port (`http://127.0.0.1:3002` gives
 * `127.0.0.1:3002`; the default port of the scheme when none is written): how the API's own
 * host is exempt, on its port only.
 */
export function originEntry(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  return `${parsed.hostname}:${port}`;
}

/**
 * Whether `host` (on `port`, when known) is exempt from the address rule: an entry
 * `api.example.com` (exact) or `*.example.com` (any subdomain), on any port or on the entry's.
 * Names are compared lower-case, without a trailing dot; IPv6 literals without brackets. An
 * entry with a port never exempts a host whose port is not known.
 */
export function hostAllowed(host: string, allowed: readonly string[], port?: number): boolean {
  const h = normaliseHost(host);
  return allowed.some((text) => {
    const entry = parseAllowEntry(text);
    if (entry.port !== undefined && entry.port !== port) return false;
    const e = entry.host;
    return e.startsWith('*.') ? h.endsWith(e.slice(1)) && h.length > e.length - 1 : h === e;
  });
}

export function normaliseHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}
