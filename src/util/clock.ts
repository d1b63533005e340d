import { readFileSync, renameSync, writeFileSync } from 'node:fs';

/**
 * Every "now" in feedmirror comes from a Clock, so tests move time instead of sleeping.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to; used by tests, the simulator and the demo. */
export class ManualClock implements Clock {
  private current: number;
  constructor(start: Date | number = Date.UTC(2026, 0, 1)) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.current);
  }
  set(to: Date | number): void {
    this.current = typeof to === 'number' ? to : to.getTime();
  }
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`clock can only move forward, got ${ms} ms`);
    this.current += ms;
  }
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/**
 * Whole days of validity left: floor((expiresAt - now) / 1 day). Floor, so "13 days" is never
 * more than what remains (13.9 days left reads 13), and for any whole threshold T,
 * `daysLeft < T` holds exactly when less than T days remain. Negative once expired.
 */
export function daysLeft(expiresAt: Date, now: Date): number {
  return Math.floor((expiresAt.getTime() - now.getTime()) / DAY);
}

/**
 * A clock read from a file that a controller moves (tests with several worker processes, the demo):
 * the file holds epoch milliseconds. Selected with FEEDMIRROR_CLOCK_FILE; never used by default.
 */
export class FileClock implements Clock {
  constructor(private readonly path: string) {}
  now(): Date {
    const text = readFileSync(this.path, 'utf8').trim();
    const ms = Number(text);
    if (!Number.isFinite(ms)) throw new Error(`clock file ${this.path} does not hold epoch milliseconds`);
    return new Date(ms);
  }
  static write(path: string, at: Date | number): void {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, String(typeof at === 'number' ? at : at.getTime()));
    renameSync(tmp, path);
  }
}

/** The clock a process runs on: the system clock unless FEEDMIRROR_CLOCK_FILE names a file clock. */
export function clockFromEnv(env: NodeJS.ProcessEnv = process.env): Clock {
  return env.FEEDMIRROR_CLOCK_FILE ? new FileClock(env.FEEDMIRROR_CLOCK_FILE) : systemClock;
}
