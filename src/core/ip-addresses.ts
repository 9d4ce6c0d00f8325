/**
 * IP addresses as the rules about them need them: which kind of network an address belongs to
 * (what an outgoing request may reach, core/egress.ts), the prefix a client is counted by (the
 * download counts), and operators' lists of addresses and CIDR ranges. Pure: nothing is resolved.
 *
 * An IPv6 address that carries an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`,
 * 6to4 `2002:aabb:ccdd::`) is judged by the IPv4 address it carries: that is where it leads.
 */
import { isIPv4, isIPv6 } from 'node:net';

/**
 * - `loopback`: this machine (127.0.0.0/8, ::1);
 * - `private`: a private or shared network (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10);
 * - `link-local`: the local link, cloud metadata services included (169.254/16, fe80::/10);
 * - `special`: no host anyone should send a request to (unspecified, "this network", multicast,
 *   broadcast, reserved, documentation and benchmark ranges, Teredo, IPv4-compatible IPv6);
 * - `public`: everything else.
 */
export type AddressKind = 'public' | 'loopback' | 'private' | 'link-local' | 'special';

/** An address as bytes: 4 for IPv4, 16 for IPv6. */
type Bytes = readonly number[];

/** The address without brackets or an IPv6 zone (`[fe80::1%eth0]` -> `fe80::1`). */
export function bareAddress(address: string): string {
  return address.replace(/^\[|\]$/g, '').replace(/%.*$/s, '');
}

/** True when `host` (a URL's hostname, brackets allowed) is an IP address rather than a name. */
export function isIpAddress(host: string): boolean {
  const bare = bareAddress(host);
  return isIPv4(bare) || isIPv6(bare);
}

function ipv4Bytes(address: string): number[] {
  return address.split('.').map(Number);
}

function ipv6Bytes(address: string): number[] {
  // A dotted IPv4 tail (`::ffff:10.0.0.1`) is two 16-bit groups.
  const text = address.toLowerCase().replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_all, a: string, b: string, c: string, d: string) =>
    `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`,
  );
  const [head = '', rest] = text.split('::');
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const front = groups(head);
  const back = groups(rest ?? '');
  const middle = rest === undefined ? [] : new Array<number>(8 - front.length - back.length).fill(0);
  return [...front, ...middle, ...back].flatMap((word) => [word >> 8, word & 0xff]);
}

/** The bytes of an IP address (brackets and zone allowed), or undefined when it is not one. */
function bytesOf(address: string): Bytes | undefined {
  const bare = bareAddress(address);
  if (isIPv4(bare)) return ipv4Bytes(bare);
  if (isIPv6(bare)) return ipv6Bytes(bare);
  return undefined;
}

/** Whether the first `bits` bits of `bytes` are those of `prefix`. */
function startsWith(bytes: Bytes, prefix: Bytes, bits: number): boolean {
  for (let bit = 0; bit < bits; bit++) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if (((bytes[byte] ?? 0) & mask) !== ((prefix[byte] ?? 0) & mask)) return false;
  }
  return true;
}

const IPV4_MAPPED: Bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/** The IPv4 address of an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), if it is one. */
function mappedIpv4(bytes: Bytes): Bytes | undefined {
  return bytes.length === 16 && startsWith(bytes, IPV4_MAPPED, 96) ? bytes.slice(12) : undefined;
}

/** The IPv4 address an IPv6 address carries and leads to, if any. */
function carriedIpv4(bytes: Bytes): Bytes | undefined {
  if (bytes.length !== 16) return undefined;
  const mapped = mappedIpv4(bytes);
  if (mapped) return mapped;
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b], 96)) return bytes.slice(12); // NAT64 (64:ff9b::/96)
  if (startsWith(bytes, [0x20, 0x02], 16)) return bytes.slice(2, 6); // 6to4 (2002::/16)
  return undefined;
}

const V4_RANGES: readonly [Bytes, number, AddressKind][] = [
  [[0, 0, 0, 0], 8, 'special'],
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'private'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'special'],
  [[192, 0, 2, 0], 24, 'special'],
  [[192, 88, 99, 0], 24, 'special'],
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'special'],
  [[198, 51, 100, 0], 24, 'special'],
  [[203, 0, 113, 0], 24, 'special'],
  [[224, 0, 0, 0], 4, 'special'],
  [[240, 0, 0, 0], 4, 'special'],
];

const V6_RANGES: readonly [Bytes, number, AddressKind][] = [
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 128, 'loopback'],
  [[], 96, 'special'], // ::/128, and the deprecated IPv4-compatible ::a.b.c.d
  [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, 'private'], // local-use NAT64
  [[0x01, 0x00], 64, 'special'], // discard-only
  [[0x20, 0x01, 0x00, 0x00], 32, 'special'], // Teredo: hides where it leads
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'special'], // documentation
  [[0xfc], 7, 'private'],
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'private'], // deprecated site-local
  [[0xff], 8, 'special'], // multicast
];

function kindOfBytes(bytes: Bytes): AddressKind {
  const carried = carriedIpv4(bytes);
  if (carried) return kindOfBytes(carried);
  for (const [prefix, bits, kind] of bytes.length === 4 ? V4_RANGES : V6_RANGES) if (startsWith(bytes, prefix, bits)) return kind;
  return 'public';
}

/** The kind of network `address` (an IP address; brackets and an IPv6 zone allowed) belongs to. Throws TypeError for anything else. */
export function addressKind(address: string): AddressKind {
  const bytes = bytesOf(address);
  if (!bytes) throw new TypeError(`${JSON.stringify(address)} is not an IP address`);
  return kindOfBytes(bytes);
}

/** What each kind is called in messages: `a loopback address`. */
export const ADDRESS_KIND_TEXT: Readonly<Record<AddressKind, string>> = {
  public: 'a public address',
  loopback: 'a loopback address',
  private: 'a private-network address',
  'link-local': 'a link-local address',
  special: 'a reserved or special-purpose address',
};

/** Bits of the prefix a client address is counted by: a /24 network, or an IPv6 /56 (one site). */
const CLIENT_PREFIX_BITS = { ipv4: 24, ipv6: 56 } as const;

/**
 * The network a client address is counted by: its IPv4 /24 or its IPv6 /56, as `a.b.c.0/24` or
 * `x:x:x:x00::/56` (an IPv4-mapped address counts as its IPv4 address). Anything that is not an IP
 * address is returned as it is.
 */
export function clientPrefix(address: string): string {
  const bytes = bytesOf(address);
  if (!bytes) return address;
  const mapped = mappedIpv4(bytes) ?? bytes;
  if (mapped.length === 4) return `${mapped.slice(0, 3).join('.')}.0/${CLIENT_PREFIX_BITS.ipv4}`;
  const kept = mapped.slice(0, CLIENT_PREFIX_BITS.ipv6 / 8);
  const words: string[] = [];
  for (let i = 0; i < kept.length; i += 2) words.push((((kept[i] ?? 0) << 8) | (kept[i + 1] ?? 0)).toString(16));
  return `${words.join(':')}::/${CLIENT_PREFIX_BITS.ipv6}`;
}

/** One address or CIDR range of an operator's list. */
export interface AddressRange {
  /** As the operator wrote it. */
  text: string;
  bytes: Bytes;
  bits: number;
}

/**
 * Parses `10.0.0.0/8`, `127.0.0.1`, `fd00::/8`, `::1`: a single address is a range of one. Throws
 * TypeError naming the entry that is neither.
 */
export function parseAddressRange(text: string): AddressRange {
  const trimmed = text.trim();
  const [address = '', bitsText] = trimmed.split('/');
  const bytes = isIPv4(address) ? ipv4Bytes(address) : isIPv6(address) ? ipv6Bytes(address) : undefined;
  const most = bytes?.length === 4 ? 32 : 128;
  const bits = bitsText === undefined ? most : /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : Number.NaN;
  if (!bytes || !(bits >= 0 && bits <= most) || trimmed.split('/').length > 2) {
    throw new TypeError(`${JSON.stringify(text)} is not an IP address or CIDR range (such as 10.0.0.0/8, 127.0.0.1 or fd00::/8)`);
  }
  return { text: trimmed, bytes, bits };
}

/** Parses a comma-separated list of addresses and CIDR ranges (empty entries ignored). Throws TypeError naming a bad entry. */
export function parseAddressRanges(text: string): AddressRange[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map(parseAddressRange);
}

/** True when `address` lies in `range` (an IPv4-mapped address is matched as its IPv4 address). */
export function inAddressRange(address: string, range: AddressRange): boolean {
  const bytes = bytesOf(address);
  if (!bytes) return false;
  const candidates = [bytes, mappedIpv4(bytes)].filter((candidate): candidate is Bytes => candidate !== undefined);
  return candidates.some((candidate) => candidate.length === range.bytes.length && startsWith(candidate, range.bytes, range.bits));
}
