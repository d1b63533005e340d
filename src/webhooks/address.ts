import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import ipaddr from 'ipaddr.js';

/**
 * Webhook endpoints on private addresses are refused unless the operator allows them
 * (WEBHOOK_ALLOW_PRIVATE): otherwise anyone who can register an endpoint could make feedmirror
 * POST into the network it runs in (SSRF). Checked when an endpoint is registered (literal
 * addresses and names that resolve to them) and again on every delivery, on the address the
 * connection actually uses (a name that resolves elsewhere later, DNS rebinding, is caught then).
 */
export class PrivateAddressError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PrivateAddressError';
  }
}

/**
 * R-NET-1: the address ranges a webhook may never reach, in one table. Every block of IANA's
 * IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and its updates) that is not
 * globally reachable, plus what those registries leave to others: multicast, the deprecated
 * IPv6 forms that still carry an IPv4 address or a site (IPv4-compatible ::/96, site-local
 * fec0::/10, 6to4 2002::/16), and every IPv6 address outside 2000::/3, the only block IANA
 * allocates for global unicast. Two blocks are refused whole though a few of their addresses are
 * globally reachable anycast services (PCP and TURN in 192.0.0.0/24, 2001:1::/48 and AMT or AS112
 * inside 2001::/23): no webhook receiver lives there. The well-known NAT64 prefix 64:ff9b::/96 is
 * globally reachable and reaches the IPv4 address it embeds, so that address decides. The first
 * matching row names the range in the refusal.
 */
export interface SpecialRange {
  cidr: string;
  name: string;
  /** The embedded IPv4 address (the last 32 bits) decides instead of the range itself. */
  embedsIpv4?: true;
}

export const SPECIAL_RANGES: readonly SpecialRange[] = [
  // IPv4 (iana-ipv4-special-registry, multicast from RFC 5771)
  { cidr: '0.0.0.0/8', name: '"this network" (RFC 791)' },
  { cidr: '10.0.0.0/8', name: 'private use (RFC 1918)' },
  { cidr: '100.64.0.0/10', name: 'shared address space, carrier-grade NAT (RFC 6598)' },
  { cidr: '127.0.0.0/8', name: 'loopback (RFC 1122)' },
  { cidr: '169.254.0.0/16', name: 'link-local (RFC 3927)' },
  { cidr: '172.16.0.0/12', name: 'private use (RFC 1918)' },
  { cidr: '192.0.0.0/24', name: 'IETF protocol assignments (RFC 6890)' },
  { cidr: '192.0.2.0/24', name: 'documentation, TEST-NET-1 (RFC 5737)' },
  { cidr: '192.88.99.0/24', name: 'deprecated 6to4 relay anycast (RFC 7526)' },
  { cidr: '192.168.0.0/16', name: 'private use (RFC 1918)' },
  { cidr: '198.18.0.0/15', name: 'benchmarking (RFC 2544)' },
  { cidr: '198.51.100.0/24', name: 'documentation, TEST-NET-2 (RFC 5737)' },
  { cidr: '203.0.113.0/24', name: 'documentation, TEST-NET-3 (RFC 5737)' },
  { cidr: '224.0.0.0/4', name: 'multicast (RFC 5771)' },
  { cidr: '255.255.255.255/32', name: 'limited broadcast (RFC 919)' },
  { cidr: '240.0.0.0/4', name: 'reserved (RFC 1112)' },
  // IPv6 (iana-ipv6-special-registry, multicast from RFC 4291, deprecated forms)
  { cidr: '::/128', name: 'unspecified (RFC 4291)' },
  { cidr: '::1/128', name: 'loopback (RFC 4291)' },
  { cidr: '::ffff:0:0/96', name: 'IPv4-mapped (RFC 4291)' },
  { cidr: '::/96', name: 'deprecated IPv4-compatible (RFC 4291)' },
  { cidr: '64:ff9b::/96', name: 'NAT64 well-known prefix (RFC 6052)', embedsIpv4: true },
  { cidr: '64:ff9b:1::/48', name: 'local-use NAT64 (RFC 8215)' },
  { cidr: '100::/64', name: 'discard-only (RFC 6666)' },
  { cidr: '100:0:0:1::/64', name: 'dummy prefix (RFC 9780)' },
  { cidr: '2001::/23', name: 'IETF protocol assignments: Teredo, benchmarking, ORCHID (RFC 2928)' },
  { cidr: '2001:db8::/32', name: 'documentation (RFC 3849)' },
  { cidr: '2002::/16', name: 'deprecated 6to4 (RFC 3056)' },
  { cidr: '3fff::/20', name: 'documentation (RFC 9637)' },
  { cidr: '5f00::/16', name: 'segment routing SIDs (RFC 9602)' },
  { cidr: 'fc00::/7', name: 'unique-local (RFC 4193)' },
  { cidr: 'fe80::/10', name: 'link-local (RFC 4291)' },
  { cidr: 'fec0::/10', name: 'deprecated site-local (RFC 3879)' },
  { cidr: 'ff00::/8', name: 'multicast (RFC 4291)' },
  { cidr: '::/3', name: 'not allocated for global unicast (outside 2000::/3)' },
  { cidr: '4000::/2', name: 'not allocated for global unicast (outside 2000::/3)' },
  { cidr: '8000::/1', name: 'not allocated for global unicast (outside 2000::/3)' },
];

const PARSED_RANGES = SPECIAL_RANGES.map((r) => ({ ...r, range: ipaddr.parseCIDR(r.cidr) }));

/** The special-purpose range an address falls in (R-NET-1), or null when it is globally reachable. */
export function specialRangeOf(address: string): SpecialRange | null {
  if (!ipaddr.isValid(address)) return { cidr: address, name: 'not an IP address' };
  const ip = ipaddr.parse(address);
  for (const r of PARSED_RANGES) {
    if (ip.kind() !== r.range[0].kind() || !ip.match(r.range)) continue;
    if (!r.embedsIpv4) return r;
    const parts = (ip as ipaddr.IPv6).parts;
    const v4 = [parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff].join('.');
    const inner = specialRangeOf(v4);
    return inner ? { cidr: r.cidr, name: `${r.name} embedding ${v4}, ${inner.name}` } : null;
  }
  return null;
}

/** Globally reachable only (R-NET-1): no address in a special-purpose range. */
export function isPublicAddress(address: string): boolean {
  return specialRangeOf(address) === null;
}

/** "a private or local address (198.18.0.0/15: benchmarking, RFC 2544)" */
function describeRefusal(address: string): string {
  const r = specialRangeOf(address);
  return `a private or local address${r ? ` (${r.cidr}: ${r.name})` : ''}`;
}

/** A URL feedmirror may POST to: http(s), and (unless allowed) no private literal address or `localhost`. */
export function checkEndpointUrl(raw: string, allowPrivate: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`not a URL: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`webhook URL must be http:// or https://, got ${url.protocol}`);
  if (url.username || url.password) throw new Error('webhook URL must not carry a user name or password');
  if (!allowPrivate) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (host === 'localhost' || host.endsWith('.localhost') || (ipaddr.isValid(host) && !isPublicAddress(host))) {
      throw new PrivateAddressError(
        `webhook URL ${url.origin} is ${host === 'localhost' || host.endsWith('.localhost') ? 'a private or local address' : describeRefusal(host)}; set WEBHOOK_ALLOW_PRIVATE=true to allow it`,
      );
    }
  }
  return url;
}

/** Resolve a host name and refuse it when any of its addresses is not public. */
export async function assertPublicHost(hostname: string): Promise<void> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const addresses: LookupAddress[] = ipaddr.isValid(host)
    ? [{ address: host, family: host.includes(':') ? 6 : 4 }]
    : await new Promise((resolve, reject) =>
        dnsLookup(host, { all: true }, (err, list) => (err ? reject(err) : resolve(list))),
      );
  const bad = addresses.find((a) => !isPublicAddress(a.address));
  if (bad)
    throw new PrivateAddressError(
      `webhook host ${host} resolves to ${bad.address}, ${describeRefusal(bad.address)}; set WEBHOOK_ALLOW_PRIVATE=true to allow it`,
    );
}

/**
 * A `lookup` for http.request that refuses private addresses: the check happens on the very
 * address the socket connects to.
 */
export function publicOnlyLookup(
  hostname: string,
  options: { all?: boolean | undefined; family?: number | string | undefined },
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
): void {
  dnsLookup(hostname, { all: true }, (err, list) => {
    if (err) return callback(err, '', 0);
    const bad = list.find((a) => !isPublicAddress(a.address));
    if (bad)
      return callback(
        new PrivateAddressError(
          `webhook host ${hostname} resolves to ${bad.address}, ${describeRefusal(bad.address)}; set WEBHOOK_ALLOW_PRIVATE=true to allow it`,
        ),
        '',
        0,
      );
    if (options.all) return callback(null, list);
    const first = list[0]!;
    return callback(null, first.address, first.family);
  });
}
