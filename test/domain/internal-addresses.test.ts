import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isInternalAddress, isInternalHostname } from '../../src/domain/internal-addresses.ts';

// [address, internal?, what it is]
const ADDRESSES: readonly (readonly [string, boolean, string])[] = [
  // Public IPv4, including the neighbours of internal ranges.
  ['8.8.8.8', false, 'public'],
  ['1.1.1.1', false, 'public'],
  ['93.184.216.34', false, 'public'],
  ['1.0.0.0', false, 'just above 0.0.0.0/8'],
  ['9.255.255.255', false, 'just below 10/8'],
  ['11.0.0.0', false, 'just above 10/8'],
  ['100.63.255.255', false, 'just below 100.64/10'],
  ['100.128.0.0', false, 'just above 100.64/10'],
  ['126.255.255.255', false, 'just below 127/8'],
  ['128.0.0.0', false, 'just above 127/8'],
  ['169.253.255.255', false, 'just below 169.254/16'],
  ['169.255.0.0', false, 'just above 169.254/16'],
  ['172.15.255.255', false, 'just below 172.16/12'],
  ['172.32.0.0', false, 'just above 172.16/12'],
  ['191.255.255.255', false, 'just below 192.0.0/24'],
  ['192.0.1.1', false, 'between 192.0.0/24 and 192.0.2/24'],
  ['192.167.255.255', false, 'just below 192.168/16'],
  ['192.169.0.0', false, 'just above 192.168/16'],
  ['198.17.255.255', false, 'just below 198.18/15'],
  ['198.20.0.0', false, 'just above 198.18/15'],
  ['223.255.255.255', false, 'just below multicast'],
  // Internal IPv4.
  ['0.0.0.0', true, 'unspecified'],
  ['0.255.255.255', true, 'this network'],
  ['127.0.0.1', true, 'loopback'],
  ['127.255.255.254', true, 'loopback'],
  ['10.0.0.1', true, 'private 10/8'],
  ['10.255.255.255', true, 'private 10/8'],
  ['172.16.0.1', true, 'private 172.16/12'],
  ['172.31.255.255', true, 'private 172.16/12'],
  ['192.168.0.1', true, 'private 192.168/16'],
  ['192.168.255.255', true, 'private 192.168/16'],
  ['169.254.0.1', true, 'link-local'],
  ['169.254.169.254', true, 'cloud metadata'],
  ['100.64.0.0', true, 'CGNAT'],
  ['100.127.255.255', true, 'CGNAT'],
  ['192.0.0.8', true, 'IETF protocol assignments'],
  ['192.0.2.1', true, 'TEST-NET-1'],
  ['198.51.100.7', true, 'TEST-NET-2'],
  ['203.0.113.9', true, 'TEST-NET-3'],
  ['198.18.0.1', true, 'benchmarking'],
  ['198.19.255.255', true, 'benchmarking'],
  ['224.0.0.1', true, 'multicast'],
  ['239.255.255.250', true, 'multicast (SSDP)'],
  ['240.0.0.1', true, 'reserved'],
  ['255.255.255.255', true, 'broadcast'],
  // Public IPv6.
  ['2606:4700:4700::1111', false, 'public'],
  ['2001:4860:4860::8888', false, 'public'],
  ['2a00:1450:4001:82a::200e', false, 'public'],
  ['2001:200::1', false, 'just above 2001::/23'],
  ['::ffff:8.8.8.8', false, 'IPv4-mapped public'],
  ['::ffff:808:808', false, 'IPv4-mapped public, hex'],
  ['64:ff9b::808:808', false, 'NAT64 of a public address'],
  ['2002:808:808::1', false, '6to4 of a public address'],
  // Internal IPv6.
  ['::1', true, 'loopback'],
  ['0:0:0:0:0:0:0:1', true, 'loopback, uncompressed'],
  ['::', true, 'unspecified'],
  ['fc00::1', true, 'unique local'],
  ['fd12:3456:789a::1', true, 'unique local'],
  ['fe80::1', true, 'link-local'],
  ['fe80::1%eth0', true, 'link-local with a zone'],
  ['febf:ffff::1', true, 'link-local, top of fe80::/10'],
  ['fec0::1', true, 'site-local'],
  ['ff02::1', true, 'multicast'],
  ['ff05::2', true, 'multicast'],
  ['2001:db8::1', true, 'documentation'],
  ['3fff::1', true, 'documentation'],
  ['2001::1', true, 'Teredo'],
  ['100::1', true, 'discard-only'],
  ['4000::1', true, 'outside global unicast 2000::/3'],
  ['::ffff:127.0.0.1', true, 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', true, 'IPv4-mapped loopback, hex'],
  ['::ffff:10.0.0.1', true, 'IPv4-mapped private'],
  ['::ffff:169.254.169.254', true, 'IPv4-mapped metadata'],
  ['::127.0.0.1', true, 'IPv4-compatible loopback'],
  ['::7f00:1', true, 'IPv4-compatible loopback, hex'],
  ['::a00:1', true, 'IPv4-compatible private'],
  ['64:ff9b::127.0.0.1', true, 'NAT64 of loopback'],
  ['64:ff9b::a9fe:a9fe', true, 'NAT64 of metadata'],
  ['64:ff9b:1::1', true, 'local-use NAT64'],
  ['2002:7f00:1::', true, '6to4 of loopback'],
  ['2002:a00:1::1', true, '6to4 of a private address'],
  ['2002:c0a8:101::1', true, '6to4 of 192.168.1.1'],
  ['[::1]', true, 'bracketed loopback'],
  // Not addresses at all: the guard fails closed.
  ['', true, 'empty'],
  ['example.com', true, 'a name'],
  ['127.1', true, 'a short IPv4 form'],
  ['1.2.3.256', true, 'out of range'],
];

describe('isInternalAddress', () => {
  for (const [address, internal, what] of ADDRESSES) {
    test(`${address || '(empty)'} is ${internal ? 'internal' : 'public'} (${what})`, () => {
      assert.equal(isInternalAddress(address), internal);
    });
  }

  test('is case-insensitive for IPv6', () => {
    assert.equal(isInternalAddress('FE80::1'), true);
    assert.equal(isInternalAddress('::FFFF:7F00:1'), true);
    assert.equal(isInternalAddress('2606:4700:4700::1111'.toUpperCase()), false);
  });
});

const HOSTNAMES: readonly (readonly [string, boolean])[] = [
  ['localhost', true],
  ['LOCALHOST', true],
  ['localhost.', true],
  ['foo.localhost', true],
  ['a.b.localhost.', true],
  ['printer.local', true],
  ['metadata.google.internal', true],
  ['db.internal', true],
  ['box.localdomain', true],
  ['router.home.arpa', true],
  ['intranet', true],
  ['Intranet.', true],
  ['', true],
  ['example.com', false],
  ['hooks.example.com.', false],
  ['localhost.example.com', false],
  ['notlocal', true],
  ['mylocal.com', false],
  ['internal.example.org', false],
  ['example.localhosts', false],
  ['8.8.8.8', false],
];

describe('isInternalHostname', () => {
  for (const [host, internal] of HOSTNAMES) {
    test(`${JSON.stringify(host)} is ${internal ? 'internal' : 'not internal by name'}`, () => {
      assert.equal(isInternalHostname(host), internal);
    });
  }
});
