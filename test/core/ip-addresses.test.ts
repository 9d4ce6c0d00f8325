/**
 * The kinds of address an outgoing request may or may not reach, the network a client is counted
 * by, and operators' address lists.
 */
import { describe, expect, it } from 'vitest';

import { addressKind, clientPrefix, inAddressRange, parseAddressRange, parseAddressRanges } from '../../src/core/ip-addresses.js';

describe('addressKind', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['0.0.0.0', 'special'],
    ['::', 'special'],
    ['224.0.0.251', 'special'],
    ['255.255.255.255', 'special'],
    ['192.0.2.10', 'special'],
    ['2001:db8::1', 'special'],
    ['ff02::1', 'special'],
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['2606:4700:4700::1111', 'public'],
  ])('%s is %s', (address, kind) => {
    expect(addressKind(address)).toBe(kind);
  });

  it('judges an IPv6 address carrying an IPv4 one by the IPv4 address it leads to', () => {
    expect(addressKind('::ffff:127.0.0.1')).toBe('loopback');
    expect(addressKind('::ffff:7f00:1')).toBe('loopback');
    expect(addressKind('::ffff:10.1.2.3')).toBe('private');
    expect(addressKind('64:ff9b::a9fe:a9fe')).toBe('link-local'); // NAT64 of 169.254.169.254
    expect(addressKind('2002:c0a8:0101::1')).toBe('private'); // 6to4 of 192.168.1.1
    expect(addressKind('::ffff:8.8.8.8')).toBe('public');
  });

  it('refuses what is not an address', () => {
    expect(() => addressKind('example.com')).toThrow(TypeError);
  });
});

describe('clientPrefix', () => {
  it('counts an IPv4 client by its /24 and an IPv6 client by its /56', () => {
    expect(clientPrefix('203.0.113.7')).toBe('203.0.113.0/24');
    expect(clientPrefix('203.0.113.250')).toBe(clientPrefix('203.0.113.7'));
    expect(clientPrefix('203.0.114.7')).not.toBe(clientPrefix('203.0.113.7'));
    expect(clientPrefix('::ffff:203.0.113.7')).toBe('203.0.113.0/24');
    expect(clientPrefix('2001:db8:aa:bb01:1:2:3:4')).toBe('2001:db8:aa:bb00::/56');
    expect(clientPrefix('2001:db8:aa:bbff::9')).toBe(clientPrefix('2001:db8:aa:bb01:1:2:3:4'));
    expect(clientPrefix('2001:db8:aa:cc00::1')).not.toBe(clientPrefix('2001:db8:aa:bb01:1:2:3:4'));
  });
});

describe('address ranges', () => {
  it('matches addresses and CIDR ranges, an IPv4-mapped address as its IPv4 address', () => {
    const ranges = parseAddressRanges(' 10.0.0.0/8, 127.0.0.1 ,fd00::/8,');
    expect(ranges.map((r) => r.text)).toEqual(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);
    const [ten, loopback, ula] = ranges as [typeof ranges[0], typeof ranges[0], typeof ranges[0]];
    expect(inAddressRange('10.200.3.4', ten)).toBe(true);
    expect(inAddressRange('11.0.0.1', ten)).toBe(false);
    expect(inAddressRange('127.0.0.1', loopback)).toBe(true);
    expect(inAddressRange('::ffff:127.0.0.1', loopback)).toBe(true);
    expect(inAddressRange('127.0.0.2', loopback)).toBe(false);
    expect(inAddressRange('fd00:1::5', ula)).toBe(true);
    expect(inAddressRange('fe80::1', ula)).toBe(false);
  });

  it('names an entry that is not an address or a range', () => {
    for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0/8', '::1/129', '1.2.3.4/8/2']) {
      expect(() => parseAddressRange(bad), bad).toThrow(new RegExp(`"${bad.replace(/[./]/g, '\\$&')}" is not an IP address or CIDR range`));
    }
  });
});
