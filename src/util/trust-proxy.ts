import { isIP } from 'node:net';

/**
 * TRUST_PROXY: which peers may tell feedmirror the client's address (X-Forwarded-For) and
 * scheme (X-Forwarded-Proto). Express's `trust proxy` takes the result as it is.
 *  - unset or `false`: nobody; the client is the TCP peer (right when nothing is in front);
 *  - a hop count (`1`: one proxy in front, whatever its address: docker-proxy, an Ingress);
 *  - addresses and CIDR ranges, comma-separated, and Express's names `loopback`, `linklocal`,
 *    `uniquelocal` (the proxy's own addresses, e.g. `10.0.0.0/8`).
 * `true` (trust every hop) is refused: any client could then pick its own address by sending
 * X-Forwarded-For, and walk around the login throttle.
 */
export type TrustProxy = false | number | string[];

const NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function validRange(entry: string): boolean {
  if (NAMES.has(entry)) return true;
  const [addr, bits, extra] = entry.split('/');
  if (extra !== undefined || !addr) return false;
  const family = isIP(addr);
  if (!family) return false;
  if (bits === undefined) return true;
  if (!/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

/** The setting's value, or an error message naming what is wrong (never echoing the value). */
export function parseTrustProxy(raw: string | undefined): TrustProxy | { error: string } {
  const v = (raw ?? '').trim().toLowerCase();
  if (v === '' || v === 'false' || v === '0') return false;
  if (v === 'true')
    return {
      error:
        'true would trust any client to name its own address; give the number of proxies in front (e.g. 1) or their addresses (e.g. 10.0.0.0/8)',
    };
  if (/^\d+$/.test(v)) {
    const n = Number(v);
    return n <= 10 ? n : { error: 'a hop count above 10 is not plausible' };
  }
  const entries = v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  const bad = entries.filter((e) => !validRange(e));
  if (bad.length || entries.length === 0)
    return {
      error:
        'must be false, a hop count, or comma-separated addresses / CIDR ranges / loopback, linklocal, uniquelocal',
    };
  return entries;
}
