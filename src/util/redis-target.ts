/**
 * Where Redis is: one server (`redis://`, `rediss://`) or a Redis Cluster, chosen by
 * configuration: a `redis+cluster://host:port,host:port` (or `rediss+cluster://`, TLS) URL in
 * REDIS_URL, and/or REDIS_CLUSTER_NODES=host:port,host:port. Pure parsing; jobs/queues.ts makes
 * the clients from it.
 */
export interface RedisNode {
  host: string;
  port: number;
}

export interface RedisTarget {
  cluster: boolean;
  /** The server, or the cluster's seed nodes (any reachable one tells the client the rest). */
  nodes: RedisNode[];
  username?: string;
  password?: string;
  tls: boolean;
  /** Database number; always 0 on a cluster. */
  db: number;
}

const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]*)(?:\/(\d*))?$/;
const NODE = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s,/]+)):(\d{1,5})$/;

/** `host:port` or `[v6]:port`; throws with what is wrong. */
export function parseRedisNode(text: string): RedisNode {
  const m = NODE.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 1 && port <= 65535))
    throw new Error(`"${text.trim()}" is not host:port (e.g. 10.0.0.1:6379 or [fd00::1]:6379)`);
  return { host: m[1] ?? m[2]!, port };
}

/** A comma-separated list of host:port; throws on an empty list or a bad entry. */
export function parseRedisNodes(text: string): RedisNode[] {
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length === 0) throw new Error('no host:port given');
  return parts.map(parseRedisNode);
}

const decode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/**
 * REDIS_URL (and REDIS_CLUSTER_NODES) as a target. REDIS_CLUSTER_NODES makes it a cluster whose
 * seeds are those nodes (plus the cluster URL's, when REDIS_URL is one); a plain REDIS_URL then
 * only gives the user name, password and TLS (`rediss://`). Throws with what is wrong.
 */
export function parseRedisTarget(url: string, clusterNodes?: string): RedisTarget {
  const extra = clusterNodes?.trim() ? parseRedisNodes(clusterNodes) : [];
  const m = CLUSTER_URL.exec(url);
  if (m) {
    const nodes = m[3] ? parseRedisNodes(m[3]) : [];
    const all = dedupe([...extra, ...nodes]);
    if (all.length === 0) throw new Error('a redis+cluster:// URL needs host:port of at least one node');
    if (m[4] && Number(m[4]) !== 0) throw new Error('Redis Cluster has only database 0');
    return { cluster: true, nodes: all, tls: m[1] === 'rediss', db: 0, ...credentials(m[2]) };
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error('must be a redis://, rediss:// or redis+cluster:// URL');
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new Error('must be a redis://, rediss:// or redis+cluster:// URL');
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new Error('the database number after the / must be a whole number');
  const creds = {
    ...(u.username ? { username: decode(u.username) } : {}),
    ...(u.password ? { password: decode(u.password) } : {}),
  };
  const tls = u.protocol === 'rediss:';
  if (extra.length > 0) {
    if (db !== 0) throw new Error('Redis Cluster has only database 0 (REDIS_CLUSTER_NODES is set)');
    return { cluster: true, nodes: dedupe(extra), tls, db: 0, ...creds };
  }
  const host = u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  return { cluster: false, nodes: [{ host, port: u.port ? Number(u.port) : 6379 }], tls, db, ...creds };
}

function credentials(userinfo: string | undefined): { username?: string; password?: string } {
  if (!userinfo) return {};
  const i = userinfo.indexOf(':');
  const user = decode(i < 0 ? userinfo : userinfo.slice(0, i));
  const password = i < 0 ? '' : decode(userinfo.slice(i + 1));
  return { ...(user ? { username: user } : {}), ...(password ? { password } : {}) };
}

function dedupe(nodes: RedisNode[]): RedisNode[] {
  const seen = new Set<string>();
  return nodes.filter((n) => {
    const k = `${n.host}:${n.port}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

const hostPort = (n: RedisNode) => (n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`);

/** Where Redis was looked for, without the password: `host:port/db`, or `cluster host:port,host:port`. */
export function describeRedisTarget(t: RedisTarget): string {
  if (t.cluster) return `cluster ${t.nodes.map(hostPort).join(',')}`;
  return `${hostPort(t.nodes[0]!)}${t.db ? `/${t.db}` : ''}`;
}

/**
 * The hash tag of a key as Redis Cluster reads it: what is between the first `{` and the first
 * `}` after it, when that is not empty. Keys with the same tag are in the same slot.
 */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

/**
 * R-SCL-1: the key prefix feedmirror uses on this target. On a cluster every key must carry one
 * hash tag (BullMQ's scripts and transactions, and ours, touch several keys at once, and Redis
 * Cluster refuses a command whose keys are in different slots: CROSSSLOT), so a REDIS_PREFIX
 * without one is wrapped in braces (`feedmirror` -> `{feedmirror}`); one with a tag is kept.
 */
export function effectiveRedisPrefix(prefix: string, cluster: boolean): string {
  if (!cluster || hashTag(prefix) !== undefined) return prefix;
  return `{${prefix}}`;
}
