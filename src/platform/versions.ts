import { DAY } from '../util/clock.ts';
import { API_VERSIONS } from './identifiers.ts';

/**
 * The platform API versions (R-MED-1, R-MED-13): which ones feedmirror knows, and how near the
 * pinned one is to its end of availability. Pure: doctor, account health and `platform compare`
 * ask the same function, so they cannot disagree on a date.
 */

export type ApiVersionInfo = (typeof API_VERSIONS)[number];

export function knownVersions(): string[] {
  return API_VERSIONS.map((v) => v.version);
}

export function versionInfo(version: string): ApiVersionInfo | undefined {
  return API_VERSIONS.find((v) => v.version === version);
}

/** The newest version feedmirror knows. */
export function newestVersion(): string {
  return API_VERSIONS[API_VERSIONS.length - 1]!.version;
}

/** The first instant the version no longer answers: the day after its last day, 00:00 UTC. */
export function versionEnd(info: ApiVersionInfo): Date | undefined {
  return info.availableUntil ? new Date(Date.parse(`${info.availableUntil}T00:00:00Z`) + DAY) : undefined;
}

export interface VersionAvailability {
  version: string;
  /** ok: not within the lead; warn: within it; fail: past its end (data calls stop). */
  level: 'ok' | 'warn' | 'fail';
  /** The last day it answers (YYYY-MM-DD), or null when not announced. */
  availableUntil: string | null;
  /** Whole days until its end; null when not announced. */
  daysLeft: number | null;
  /** One line for an operator, naming what to do when not ok. */
  text: string;
}

/**
 * R-MED-13: where the pinned version stands at `now`, warning `warnDays` before its end. An
 * unknown version is a failure (config refuses one; this is for callers handed one otherwise).
 */
export function versionAvailability(version: string, now: Date, warnDays: number): VersionAvailability {
  const info = versionInfo(version);
  if (!info)
    return {
      version,
      level: 'fail',
      availableUntil: null,
      daysLeft: null,
      text: `platform API version ${version} is not one feedmirror knows (${knownVersions().join(', ')})`,
    };
  const end = versionEnd(info);
  if (!end)
    return {
      version,
      level: 'ok',
      availableUntil: null,
      daysLeft: null,
      text: `platform API version ${version} is pinned; its end of availability is not announced`,
    };
  const daysLeft = Math.floor((end.getTime() - now.getTime()) / DAY);
  const newer = API_VERSIONS.filter((v) => v.releasedOn > info.releasedOn).map((v) => v.version);
  const move = newer.length
    ? `compare before moving: \`feedmirror platform compare --version ${newer[newer.length - 1]}\`, then set GRAPH_API_VERSION (docs/platform-versions.md)`
    : 'no newer version is known to this release of feedmirror: upgrade feedmirror';
  if (now.getTime() >= end.getTime())
    return {
      version,
      level: 'fail',
      availableUntil: info.availableUntil,
      daysLeft,
      text: `platform API version ${version} was available until ${info.availableUntil}: data calls through it fail; ${move}`,
    };
  if (daysLeft < warnDays)
    return {
      version,
      level: 'warn',
      availableUntil: info.availableUntil,
      daysLeft,
      text: `platform API version ${version} is available until ${info.availableUntil} (${daysLeft} day${daysLeft === 1 ? '' : 's'} left): ${move}`,
    };
  return {
    version,
    level: 'ok',
    availableUntil: info.availableUntil,
    daysLeft,
    text: `platform API version ${version} is pinned, available until ${info.availableUntil} (${daysLeft} days left)`,
  };
}
