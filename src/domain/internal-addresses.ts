/**
 * Which addresses and host names a webhook must not reach: loopback, private, link-local and every other address that
 * is not a public unicast address on the internet. A gateway that posted to such an address on an integrator's say-so
 * would let them probe its own network (server-side request forgery), the cloud metadata service at 169.254.169.254
 * first of all.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';

// IANA's IPv4 special-purpose registry, less the few blocks that are globally reachable (AS112, AMT).
const INTERNAL_IPV4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 included
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, the cloud metadata service 169.254.169.254 included
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // the deprecated 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, with the broadcast address 255.255.255.255
];

// IPv6 ranges judged by the address itself. The ranges that carry an IPv4 address (mapped, compatible, NAT64, 6to4)
// are judged by that IPv4 address instead, before this list is consulted; see isInternalIPv6.
const INTERNAL_IPV6: readonly (readonly [string, number])[] = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments: Teredo, benchmarking (2001:2::/48), ORCHID...
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['5f00::', 16], // segment routing (SRv6) SIDs
  ['fc00::', 7], // unique local (the IPv6 private range)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

const internalIPv4 = new BlockList();
for (const [network, prefix] of INTERNAL_IPV4) internalIPv4.addSubnet(network, prefix, 'ipv4');

const internalIPv6 = new BlockList();
for (const [network, prefix] of INTERNAL_IPV6) internalIPv6.addSubnet(network, prefix, 'ipv6');

// Global unicast: IANA has allocated nothing outside 2000::/3 for public addresses.
const globalUnicastIPv6 = new BlockList();
globalUnicastIPv6.addSubnet('2000::', 3, 'ipv6');

/**
 * Whether an IPv4 or IPv6 address (as text: "10.0.0.1", "::ffff:127.0.0.1", "fe80::1%eth0") is loopback, private,
 * link-local or otherwise not a public internet address. IPv6 addresses that embed an IPv4 address (IPv4-mapped,
 * IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the IPv4 address they lead to.
 *
 * Text that is not an IP address counts as internal: this is a guard, and it fails closed.
 */
export function isInternalAddress(ip: string): boolean {
  const address = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (isIPv4(address)) return internalIPv4.check(address, 'ipv4');
  // A zone ("fe80::1%eth0") only ever qualifies a link-local or other non-global address; judge the address without it.
  const withoutZone = address.split('%', 1)[0] ?? '';
  if (isIPv6(withoutZone)) return isInternalIPv6(withoutZone);
  return true;
}

function isInternalIPv6(address: string): boolean {
  const groups = ipv6Groups(address);
  if (groups === null) return true;
  const embedded = embeddedIPv4(groups);
  if (embedded !== null) return internalIPv4.check(embedded, 'ipv4');
  return internalIPv6.check(address, 'ipv6') || !globalUnicastIPv6.check(address, 'ipv6');
}

/** The IPv4 address an IPv6 address stands for, when it is one of the forms that carry one. */
function embeddedIPv4(groups: readonly number[]): string | null {
  const at = (index: number): number => groups[index] ?? 0;
  const zeroes = (from: number, to: number): boolean => groups.slice(from, to).every((group) => group === 0);
  // ::ffff:a.b.c.d (IPv4-mapped) and ::a.b.c.d (IPv4-compatible, deprecated; :: and ::1 land on 0.0.0.0/8 too).
  if (zeroes(0, 5) && (at(5) === 0xffff || at(5) === 0)) return ipv4FromGroups(at(6), at(7));
  // 64:ff9b::a.b.c.d: NAT64 translates it to a.b.c.d.
  if (at(0) === 0x64 && at(1) === 0xff9b && zeroes(2, 6)) return ipv4FromGroups(at(6), at(7));
  // 2002:AABB:CCDD::/48: a 6to4 site behind the IPv4 address AA.BB.CC.DD.
  if (at(0) === 0x2002) return ipv4FromGroups(at(1), at(2));
  return null;
}

function ipv4FromGroups(high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** The eight 16-bit groups of a valid IPv6 address (as isIPv6 accepts it), "::" and a dotted IPv4 tail expanded. */
function ipv6Groups(address: string): number[] | null {
  const halves = address.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string | undefined): number[] | null => {
    if (part === undefined || part === '') return [];
    const groups: number[] = [];
    for (const piece of part.split(':')) {
      if (isIPv4(piece)) {
        const [a = 0, b = 0, c = 0, d = 0] = piece.split('.').map(Number);
        groups.push((a << 8) | b, (c << 8) | d);
      } else if (/^[0-9a-f]{1,4}$/i.test(piece)) {
        groups.push(Number.parseInt(piece, 16));
      } else {
        return null;
      }
    }
    return groups;
  };
  const head = parse(halves[0]);
  const tail = parse(halves[1]);
  if (head === null || tail === null) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - tail.length;
  return missing < 1 ? null : [...head, ...new Array<number>(missing).fill(0), ...tail];
}

// Names that only ever mean something on a local network: RFC 6761 (localhost), RFC 6762 (mDNS .local), RFC 8375
// (home.arpa), and the .internal, .localdomain suffixes private networks and cloud providers use.
const INTERNAL_SUFFIXES = ['.localhost', '.local', '.internal', '.localdomain', '.home.arpa'];

/**
 * Whether a host name is internal by its name alone, without resolving it: "localhost", "*.localhost", "*.local",
 * "*.internal", "*.localdomain", "*.home.arpa", and any name without a dot ("intranet"), which only a local search
 * domain can complete. Case and trailing dots are ignored.
 */
export function isInternalHostname(host: string): boolean {
  const name = host.toLowerCase().replace(/\.+$/, '');
  if (name === 'localhost' || name === 'home.arpa' || !name.includes('.')) return true;
  return INTERNAL_SUFFIXES.some((suffix) => name.endsWith(suffix));
}
