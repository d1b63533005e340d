import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import ipaddr from 'ipaddr.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/**
 * Throttles of `feedmirror serve`, on rate-limiter-flexible. With Redis they live there, so every
 * server replica counts the same failures; without it (tests of pure code, a dashboard built
 * without Redis) in this process's memory. Records expire by themselves: nothing grows without
 * bound.
 *
 * Login (the shape of rate-limiter-flexible's "login endpoint protection" recipe, with GitLab's
 * and Grafana's numbers):
 *  - per client address: 10 failed logins in 15 minutes block that address for 15 minutes,
 *    100 in a day block it for a day;
 *  - per user name: more than 50 failures in an hour (from any number of addresses) put the
 *    name "under attack": then only addresses that have not failed may try it.
 * Only failures count, and only against the address that failed: a correct password from an
 * address that has not failed is never refused, however hard someone else is hammering.
 *
 * "An address" is what one client controls (R-NET-3): an IPv4 address, or an IPv6 /64. A single
 * host or home line gets a whole /64 (RFC 6177), so keyed on the full IPv6 address one attacker
 * had 2^64 fresh addresses, each with its own 10 tries. rate-limiter-flexible counts whatever
 * key it is given; clientKey below makes the key.
 */
export interface ThrottleVerdict {
  allowed: boolean;
  /** Seconds until the next try is allowed (when refused). */
  retryAfterSeconds: number;
}

const ALLOWED: ThrottleVerdict = { allowed: true, retryAfterSeconds: 0 };
const MINUTE_S = 60;
const HOUR_S = 3600;
const DAY_S = 86400;

export interface ThrottleStore {
  redis?: Redis | Cluster | undefined;
  /** Key prefix in Redis (REDIS_PREFIX). */
  prefix: string;
}

export interface LoginThrottleLimits {
  perClient: number;
  perClientWindowS: number;
  perClientDaily: number;
  perUserUnderAttack: number;
}

export const LOGIN_LIMITS: LoginThrottleLimits = {
  perClient: 10,
  perClientWindowS: 15 * MINUTE_S,
  perClientDaily: 100,
  perUserUnderAttack: 50,
};

function limiter(
  store: ThrottleStore,
  name: string,
  points: number,
  durationS: number,
  blockDurationS = 0,
): RateLimiterAbstract {
  const opts = {
    keyPrefix: `${store.prefix}:throttle:${name}`,
    points,
    duration: durationS,
    blockDuration: blockDurationS,
  };
  return store.redis ? new RateLimiterRedis({ ...opts, storeClient: store.redis }) : new RateLimiterMemory(opts);
}

/**
 * R-NET-3: the throttle key of a client address: an IPv4 address as it is (an IPv4-mapped IPv6
 * address, as a dual-stack socket reports IPv4 peers, is that IPv4 address), an IPv6 address as
 * its /64. Anything else (no address at all) is used as given.
 */
export function clientKey(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return address;
  const ip = ipaddr.process(bare); // IPv4-mapped -> IPv4
  if (ip.kind() === 'ipv4') return ip.toString();
  const parts = (ip as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

/** A user name as a short key: the attacker chooses it, so it never becomes a key as it is. */
const userKey = (user: string) =>
  createHash('sha256').update(user.normalize('NFKC').toLowerCase(), 'utf8').digest('base64url').slice(0, 22);

/** consume() rejects with a RateLimiterRes once over the limit: that is a count, not an error. */
async function count(l: RateLimiterAbstract, key: string): Promise<void> {
  try {
    await l.consume(key);
  } catch (e) {
    if (!(e instanceof RateLimiterRes)) throw e;
  }
}

function verdictOf(res: RateLimiterRes | null, points: number): ThrottleVerdict | null {
  if (!res || res.consumedPoints < points) return null;
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) };
}

export class LoginThrottle {
  private readonly byClient: RateLimiterAbstract;
  private readonly byClientDaily: RateLimiterAbstract;
  private readonly byUser: RateLimiterAbstract;

  constructor(
    store: ThrottleStore,
    readonly limits: LoginThrottleLimits = LOGIN_LIMITS,
  ) {
    this.byClient = limiter(store, 'login-client', limits.perClient, limits.perClientWindowS, limits.perClientWindowS);
    this.byClientDaily = limiter(store, 'login-client-day', limits.perClientDaily, DAY_S, DAY_S);
    this.byUser = limiter(store, 'login-user', limits.perUserUnderAttack, HOUR_S);
  }

  /** May this client try to log in as this user now? Asked before the password is checked. */
  async check(address: string, user: string): Promise<ThrottleVerdict> {
    const client = clientKey(address);
    const [c, d, u] = await Promise.all([
      this.byClient.get(client),
      this.byClientDaily.get(client),
      this.byUser.get(userKey(user)),
    ]);
    const blocked = verdictOf(c, this.limits.perClient) ?? verdictOf(d, this.limits.perClientDaily);
    if (blocked) return blocked;
    // The name is under attack: an address with failures of its own waits; a clean one may try.
    const underAttack = verdictOf(u, this.limits.perUserUnderAttack);
    if (underAttack && c && c.consumedPoints > 0)
      return {
        allowed: false,
        retryAfterSeconds: Math.max(underAttack.retryAfterSeconds, Math.ceil(c.msBeforeNext / 1000)),
      };
    return ALLOWED;
  }

  async fail(address: string, user: string): Promise<void> {
    const client = clientKey(address);
    await Promise.all([
      count(this.byClient, client),
      count(this.byClientDaily, client),
      count(this.byUser, userKey(user)),
    ]);
  }

  /** A correct login clears the address's short-window count (the daily one stays). */
  async succeed(address: string): Promise<void> {
    await this.byClient.delete(clientKey(address));
  }
}

/** Starting an OAuth login (GET /connect): per client address, 10 a minute. */
export class ConnectThrottle {
  private readonly byClient: RateLimiterAbstract;
  constructor(
    store: ThrottleStore,
    private readonly perMinute = 10,
  ) {
    this.byClient = limiter(store, 'connect-client', perMinute, MINUTE_S);
  }

  async take(address: string): Promise<ThrottleVerdict> {
    try {
      await this.byClient.consume(clientKey(address));
      return ALLOWED;
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(e.msBeforeNext / 1000)) };
    }
  }
}
