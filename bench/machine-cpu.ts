import { readFile } from 'node:fs/promises';
import type { Cluster, Redis } from 'ioredis';

/**
 * CPU spent on the whole machine and by Redis, between two snapshots. The pipeline and the limit
 * share the cores with Redis, PostgreSQL and the fake outside world, so a share of the limit is
 * only explained when every process's CPU is counted, not just the pipeline's own.
 * The machine's figure comes from /proc/stat (Linux); elsewhere it is undefined.
 */
export interface CpuSnapshot {
  machineS?: number;
  redisS?: number;
}

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux architecture Node runs on

async function machineBusySeconds(): Promise<number | undefined> {
  try {
    const first = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!;
    // cpu user nice system idle iowait irq softirq steal ...: busy = all but idle and iowait
    const [user, nice, system, , , irq, softirq, steal] = first.trim().split(/\s+/).slice(1).map(Number);
    return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

async function redisCpuSeconds(redis: Redis | Cluster): Promise<number | undefined> {
  try {
    const info = await redis.info('cpu');
    const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? NaN);
    const s = field('used_cpu_sys') + field('used_cpu_user');
    return Number.isFinite(s) ? s : undefined;
  } catch {
    return undefined;
  }
}

export async function cpuSnapshot(redis: Redis | Cluster): Promise<CpuSnapshot> {
  const [machineS, redisS] = await Promise.all([machineBusySeconds(), redisCpuSeconds(redis)]);
  return { ...(machineS !== undefined ? { machineS } : {}), ...(redisS !== undefined ? { redisS } : {}) };
}

/** Seconds of CPU between two snapshots (undefined where a side could not be read). */
export function cpuSince(before: CpuSnapshot, after: CpuSnapshot): { machineS?: number; redisS?: number } {
  const d = (a?: number, b?: number) => (a === undefined || b === undefined ? undefined : b - a);
  const machineS = d(before.machineS, after.machineS);
  const redisS = d(before.redisS, after.redisS);
  return { ...(machineS !== undefined ? { machineS } : {}), ...(redisS !== undefined ? { redisS } : {}) };
}
