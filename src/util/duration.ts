/**
 * Durations written the way operators write them: `90s`, `30m`, `12h`, `7d`, `2w` (one unit).
 * Used by settings (SESSION_IDLE_TIMEOUT) and commands (`accounts invite --expires 7d`).
 */
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 } as const;

export function parseDuration(text: string): number | null {
  const m = /^\s*(\d{1,6})\s*([smhdw])\s*$/i.exec(text);
  if (!m) return null;
  const ms = Number(m[1]) * UNIT_MS[m[2]!.toLowerCase() as keyof typeof UNIT_MS];
  return ms > 0 ? ms : null;
}

export const DURATION_HINT = 'a number and a unit: s, m, h, d or w (e.g. 30m, 12h, 7d)';
