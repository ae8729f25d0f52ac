import { describe, expect, it } from 'vitest';
import {
  hostAllowed,
  judgeAddress,
  originEntry,
  parseAllowEntry,
  parseV6,
} from '../../../src/media/address.ts';

const range = (address: string) => {
  const v = judgeAddress(address);
  return v.allowed ? 'allowed' : v.range;
};

describe('judgeAddress', () => {
  it('refuses the IPv4 ranges that are not the public internet', () => {
    expect(range('127.0.0.1')).toBe('loopback');
    expect(range('127.255.255.254')).toBe('loopback');
    expect(range('0.0.0.0')).toBe('unspecified');
    expect(range('10.1.2.3')).toBe('private');
    expect(range('172.16.0.1')).toBe('private');
    expect(range('172.31.255.255')).toBe('private');
    expect(range('192.168.1.1')).toBe('private');
    expect(range('169.254.1.1')).toBe('link-local');
    expect(range('100.64.0.1')).toBe('cgnat');
    expect(range('100.127.255.255')).toBe('cgnat');
    expect(range('169.254.169.254')).toBe('metadata');
    expect(range('169.254.170.2')).toBe('metadata');
    expect(range('100.100.100.200')).toBe('metadata');
    expect(range('192.0.0.192')).toBe('metadata');
    expect(range('192.0.2.10')).toBe('reserved');
    expect(range('198.18.0.1')).toBe('reserved');
    expect(range('224.0.0.1')).toBe('multicast');
    expect(range('255.255.255.255')).toBe('multicast');
    expect(range('240.0.0.1')).toBe('reserved');
  });

  it('allows public IPv4 addresses, including the neighbours of refused ranges', () => {
    for (const a of [
      '8.8.8.8',
      '1.1.1.1',
      '172.15.255.255',
      '172.32.0.0',
      '100.63.255.255',
      '100.128.0.0',
      '192.167.255.255',
      '11.0.0.0',
      '126.255.255.255',
      '128.0.0.0',
      '169.253.255.255',
    ]) {
      expect(range(a), a).toBe('allowed');
    }
  });

  it('refuses IPv6 loopback, private, link-local, metadata and multicast', () => {
    expect(range('::1')).toBe('loopback');
    expect(range('::')).toBe('unspecified');
    expect(range('fc00::1')).toBe('private');
    expect(range('fd12:3456::1')).toBe('private');
    expect(range('fe80::1')).toBe('link-local');
    expect(range('fe80::1%eth0')).toBe('link-local');
    expect(range('fec0::1')).toBe('private');
    expect(range('fd00:ec2::254')).toBe('metadata');
    expect(range('ff02::1')).toBe('multicast');
    expect(range('2001:db8::1')).toBe('reserved');
    expect(range('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toBe('teredo');
    expect(range('100::1')).toBe('reserved');
  });

  it('judges IPv6 forms that carry IPv4 by that address', () => {
    expect(range('::ffff:127.0.0.1')).toBe('loopback');
    expect(range('::ffff:7f00:1')).toBe('loopback');
    expect(range('::FFFF:169.254.169.254')).toBe('metadata');
    expect(range('::ffff:10.0.0.1')).toBe('private');
    expect(range('::ffff:8.8.8.8')).toBe('allowed');
    expect(range('::127.0.0.1')).toBe('loopback');
    expect(range('64:ff9b::10.0.0.1')).toBe('private');
    expect(range('64:ff9b::8.8.8.8')).toBe('allowed');
    expect(range('2002:a9fe:a9fe::1')).toBe('metadata');
    expect(range('2002:808:808::1')).toBe('allowed');
  });

  it('decodes IPv4-mapped ::ffff:0:0/96 and translated ::ffff:0:0:0/96, then applies the IPv4 rule', () => {
    for (const [mapped, v4] of [
      ['::ffff:127.0.0.1', '127.0.0.1'],
      ['0:0:0:0:0:ffff:a9fe:a9fe', '169.254.169.254'],
      ['::ffff:c0a8:101', '192.168.1.1'],
      ['::ffff:0:127.0.0.1', '127.0.0.1'],
      ['::ffff:0:a9fe:a9fe', '169.254.169.254'],
      ['::ffff:0:a00:1', '10.0.0.1'],
      ['::ffff:0:808:808', '8.8.8.8'],
      ['::ffff:0:0', '0.0.0.0'],
    ] as const) {
      expect(range(mapped), mapped).toBe(range(v4));
    }
    expect(range('::ffff:0:a9fe:a9fe')).toBe('metadata');
    expect(range('::ffff:0:808:808')).toBe('allowed');
  });

  it('refuses local-use NAT64 64:ff9b:1::/48 whatever address it embeds', () => {
    expect(range('64:ff9b:1::a00:1')).toBe('private');
    expect(range('64:ff9b:1::808:808')).toBe('private');
    expect(range('64:ff9b:1:ffff:ffff::1')).toBe('private');
    // Its neighbours are judged as before.
    expect(range('64:ff9b:2::808:808')).toBe('allowed');
    expect(range('64:ff9b::808:808')).toBe('allowed');
  });

  it('allows public IPv6 addresses; refuses what is not an address', () => {
    expect(range('2606:4700:4700::1111')).toBe('allowed');
    expect(range('2a00:1450:4001:80b::200e')).toBe('allowed');
    expect(range('example.com')).toBe('reserved');
    expect(range('1.2.3')).toBe('reserved');
  });

  it('parses IPv6 text forms', () => {
    expect(parseV6('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseV6('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseV6('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseV6('::ffff:1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
    expect(parseV6('1:2:3:4:5:6:7')).toBeUndefined();
    expect(parseV6('1::2::3')).toBeUndefined();
    expect(parseV6('1:2:3:4::5:6:7:8')).toBeUndefined();
    expect(parseV6('12345::')).toBeUndefined();
  });
});

describe('hostAllowed', () => {
  it('matches exact names and *.suffix, case- and trailing-dot-insensitively', () => {
    const allowed = ['media.internal', '*.files.example', '127.0.0.1', '[::1]'];
    expect(hostAllowed('MEDIA.internal.', allowed)).toBe(true);
    expect(hostAllowed('a.files.example', allowed)).toBe(true);
    expect(hostAllowed('a.b.files.example', allowed)).toBe(true);
    expect(hostAllowed('files.example', allowed)).toBe(false);
    expect(hostAllowed('evilfiles.example', allowed)).toBe(false);
    expect(hostAllowed('media.internal.evil', allowed)).toBe(false);
    expect(hostAllowed('127.0.0.1', allowed)).toBe(true);
    expect(hostAllowed('::1', allowed)).toBe(true);
    expect(hostAllowed('127.0.0.2', allowed)).toBe(false);
  });
});

describe('allow-list entries with a port', () => {
  it('read name, *.suffix or IP literal, with a port or without', () => {
    expect(parseAllowEntry('media.internal')).toEqual({ host: 'media.internal', port: undefined });
    expect(parseAllowEntry('Media.Internal.:8080')).toEqual({ host: 'media.internal', port: 8080 });
    expect(parseAllowEntry('*.files.example:443')).toEqual({ host: '*.files.example', port: 443 });
    expect(parseAllowEntry('10.0.0.5:3002')).toEqual({ host: '10.0.0.5', port: 3002 });
    expect(parseAllowEntry('::1')).toEqual({ host: '::1', port: undefined });
    expect(parseAllowEntry('[::1]')).toEqual({ host: '::1', port: undefined });
    expect(parseAllowEntry('[::1]:3002')).toEqual({ host: '::1', port: 3002 });
  });

  it('exempt the host on that port only', () => {
    const allowed = ['127.0.0.1:3002', '[::1]:3002', 'hooks.internal'];
    expect(hostAllowed('127.0.0.1', allowed, 3002)).toBe(true);
    expect(hostAllowed('127.0.0.1', allowed, 6379)).toBe(false);
    expect(hostAllowed('127.0.0.1', allowed)).toBe(false);
    expect(hostAllowed('[::1]', allowed, 3002)).toBe(true);
    expect(hostAllowed('::1', allowed, 22)).toBe(false);
    expect(hostAllowed('hooks.internal', allowed, 22)).toBe(true);
  });

  it("the API's origin: its host and its port, the scheme's default when none is written", () => {
    expect(originEntry('http://127.0.0.1:3002')).toBe('127.0.0.1:3002');
    expect(originEntry('https://api.firecrawl.dev')).toBe('api.firecrawl.dev:443');
    expect(originEntry('http://localhost/')).toBe('localhost:80');
    expect(originEntry('http://[::1]:3002/')).toBe('[::1]:3002');
    const api = [originEntry('http://127.0.0.1:3002')];
    expect(hostAllowed('127.0.0.1', api, 3002)).toBe(true);
    // Every other port on the API's host is under the address rule (Redis on 6379, say).
    expect(hostAllowed('127.0.0.1', api, 6379)).toBe(false);
  });
});
