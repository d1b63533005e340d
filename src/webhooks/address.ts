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

/** Public unicast only: loopback, private, link-local, unique-local, CGNAT, multicast, reserved are not. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return ip.range() === 'unicast';
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
        `webhook URL ${url.origin} is a private or local address; set WEBHOOK_ALLOW_PRIVATE=true to allow it`,
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
      `webhook host ${host} resolves to ${bad.address}, a private or local address; set WEBHOOK_ALLOW_PRIVATE=true to allow it`,
    );
}

/**
 * A `lookup` for http.request that refuses private addresses: the check happens on the very
 * address the socket connects to.
 */
export function publicOnlyLookup(
  hostname: string,
  options: { all?: boolean; family?: number | string },
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
): void {
  dnsLookup(hostname, { all: true }, (err, list) => {
    if (err) return callback(err, '', 0);
    const bad = list.find((a) => !isPublicAddress(a.address));
    if (bad)
      return callback(
        new PrivateAddressError(
          `webhook host ${hostname} resolves to ${bad.address}, a private or local address; set WEBHOOK_ALLOW_PRIVATE=true to allow it`,
        ),
        '',
        0,
      );
    if (options.all) return callback(null, list);
    const first = list[0]!;
    return callback(null, first.address, first.family);
  });
}
