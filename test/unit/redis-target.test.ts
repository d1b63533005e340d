import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { describeRedisTarget, effectiveRedisPrefix, hashTag, parseRedisTarget } from '../../src/util/redis-target.ts';
import { redisSettings } from '../../jobs/queues.ts';

/** Choosing one Redis server or a Redis Cluster from the configuration, and the hash-tagged prefix (R-SCL-1). */
describe('Redis target', () => {
  it('a redis:// URL is one server; redis+cluster:// and REDIS_CLUSTER_NODES are a cluster', () => {
    expect(parseRedisTarget('redis://:pw@r.internal:6380/2')).toEqual({
      cluster: false,
      nodes: [{ host: 'r.internal', port: 6380 }],
      password: 'pw',
      tls: false,
      db: 2,
    });
    const c = parseRedisTarget('rediss+cluster://app:s%40cret@n1:7000,n2:7001,[fd00::1]:7002');
    expect(c).toMatchObject({ cluster: true, tls: true, db: 0, username: 'app', password: 's@cret' });
    expect(c.nodes).toEqual([
      { host: 'n1', port: 7000 },
      { host: 'n2', port: 7001 },
      { host: 'fd00::1', port: 7002 },
    ]);
    expect(describeRedisTarget(c)).toBe('cluster n1:7000,n2:7001,[fd00::1]:7002');
    const n = parseRedisTarget('rediss://:pw@ignored:6379', '10.0.0.1:6379, 10.0.0.2:6379');
    expect(n).toMatchObject({ cluster: true, tls: true, password: 'pw' });
    expect(describeRedisTarget(n)).toBe('cluster 10.0.0.1:6379,10.0.0.2:6379');
  });

  it('refuses what cannot work, saying why', () => {
    expect(() => parseRedisTarget('redis+cluster://n1:7000/3')).toThrow(/only database 0/);
    expect(() => parseRedisTarget('redis://r:6379/1', 'n1:7000')).toThrow(/only database 0/);
    expect(() => parseRedisTarget('redis+cluster://n1')).toThrow(/not host:port/);
    expect(() => parseRedisTarget('http://r:6379')).toThrow(/redis:\/\//);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'n1:7000,n2' })).toThrow(ConfigError);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'n1:7000,n2' })).toThrow(/REDIS_CLUSTER_NODES: must be host:port/);
    expect(() => loadConfig({ REDIS_URL: 'redis+cluster://n1:99999' })).toThrow(/REDIS_URL: .*not host:port/);
    const err = (() => {
      try {
        loadConfig({ REDIS_URL: 'redis://:Sup3rSecret@r:6379/4', REDIS_CLUSTER_NODES: 'n1:7000' });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toMatch(/only database 0/);
    expect(err?.message).not.toContain('Sup3rSecret');
  });

  it('on a cluster every key shares the prefix hash tag: a plain prefix is wrapped, a tagged one kept', () => {
    expect(hashTag('{feedmirror}:feed-sync:wait')).toBe('feedmirror');
    expect(hashTag('fm:{}:x')).toBeUndefined();
    expect(effectiveRedisPrefix('feedmirror', true)).toBe('{feedmirror}');
    expect(effectiveRedisPrefix('eu-{fm}', true)).toBe('eu-{fm}');
    expect(effectiveRedisPrefix('feedmirror', false)).toBe('feedmirror');
    const s = redisSettings(loadConfig({ REDIS_URL: 'redis+cluster://n1:7000', REDIS_PREFIX: 'fm' }));
    expect(s.prefix).toBe('{fm}');
    expect(redisSettings(loadConfig({})).prefix).toBe('feedmirror');
  });
});
