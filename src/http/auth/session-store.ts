import { createHash, randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { z } from 'zod';

/**
 * Server-side dashboard sessions. The browser holds only a random id (32 bytes); the record
 * lives in Redis (shared by every server replica) under the id's sha256, so a Redis dump holds no
 * usable cookie (Grafana stores its session tokens hashed the same way). A session ends when it
 * has been idle for `idleMs`, `maxMs` after it started whatever the activity, on logout, and on
 * "log out everywhere" (every session of the user). Times come from the caller's clock; the
 * Redis TTL only keeps dead records from piling up.
 */
export interface SessionRecord {
  /** The dashboard user the session belongs to. */
  user: string;
  /** Fingerprint of the credentials it was opened with: a password change ends it. */
  credentials: string;
  createdAt: number;
  seenAt: number;
}

export interface SessionStore {
  create(id: string, record: SessionRecord, ttlMs: number): Promise<void>;
  get(id: string): Promise<SessionRecord | null>;
  /** Mark activity (idle timeout restarts); ttlMs bounds the record's life in the store. */
  touch(id: string, seenAt: number, ttlMs: number): Promise<void>;
  delete(id: string): Promise<void>;
  /** Delete every session of `user`; returns how many there were. */
  deleteAllOf(user: string): Promise<number>;
}

export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

const hashId = (id: string) => createHash('sha256').update(id, 'utf8').digest('base64url');
const hashUser = (user: string) => createHash('sha256').update(user, 'utf8').digest('base64url').slice(0, 22);

const recordSchema = z.object({ user: z.string(), credentials: z.string(), createdAt: z.number(), seenAt: z.number() });

export class RedisSessionStore implements SessionStore {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly prefix: string,
  ) {}

  private key(id: string): string {
    return `${this.prefix}:session:${hashId(id)}`;
  }
  private userKey(user: string): string {
    return `${this.prefix}:sessions-of:${hashUser(user)}`;
  }

  async create(id: string, record: SessionRecord, ttlMs: number): Promise<void> {
    const userKey = this.userKey(record.user);
    // Forget ids whose records expired, so the per-user set stays as small as the live sessions.
    const members = await this.redis.smembers(userKey);
    if (members.length) {
      const alive = await this.redis.exists(...members);
      if (alive < members.length) {
        for (const m of members) if (!(await this.redis.exists(m))) await this.redis.srem(userKey, m);
      }
    }
    await this.redis
      .multi()
      .set(this.key(id), JSON.stringify(record), 'PX', Math.max(1, Math.ceil(ttlMs)))
      .sadd(userKey, this.key(id))
      .exec();
  }

  async get(id: string): Promise<SessionRecord | null> {
    const raw = await this.redis.get(this.key(id));
    if (!raw) return null;
    try {
      const parsed = recordSchema.safeParse(JSON.parse(raw));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  }

  async touch(id: string, seenAt: number, ttlMs: number): Promise<void> {
    const record = await this.get(id);
    if (!record) return;
    // XX: never resurrect a record deleted (logout) between the read and this write.
    await this.redis.set(
      this.key(id),
      JSON.stringify({ ...record, seenAt }),
      'PX',
      Math.max(1, Math.ceil(ttlMs)),
      'XX',
    );
  }

  async delete(id: string): Promise<void> {
    const record = await this.get(id);
    const tx = this.redis.multi().del(this.key(id));
    if (record) tx.srem(this.userKey(record.user), this.key(id));
    await tx.exec();
  }

  async deleteAllOf(user: string): Promise<number> {
    const userKey = this.userKey(user);
    const members = await this.redis.smembers(userKey);
    const removed = members.length ? await this.redis.del(...members) : 0;
    await this.redis.del(userKey);
    return removed;
  }
}

/** One process only: tests of pure code, and a dashboard started without Redis. */
export class MemorySessionStore implements SessionStore {
  private readonly records = new Map<string, SessionRecord>();

  async create(id: string, record: SessionRecord): Promise<void> {
    this.records.set(hashId(id), { ...record });
  }
  async get(id: string): Promise<SessionRecord | null> {
    const r = this.records.get(hashId(id));
    return r ? { ...r } : null;
  }
  async touch(id: string, seenAt: number): Promise<void> {
    const r = this.records.get(hashId(id));
    if (r) r.seenAt = seenAt;
  }
  async delete(id: string): Promise<void> {
    this.records.delete(hashId(id));
  }
  async deleteAllOf(user: string): Promise<number> {
    let n = 0;
    for (const [k, r] of this.records) {
      if (r.user === user) {
        this.records.delete(k);
        n++;
      }
    }
    return n;
  }
}
