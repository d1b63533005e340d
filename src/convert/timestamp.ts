import { z } from 'zod';

const PLATFORM_TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)(Z|[+-]\d{2}:?\d{2})$/;
const isoWithOffset = z.iso.datetime({ offset: true });

/**
 * R-CNV-6: the platform writes offsets without a colon (`2024-05-01T12:00:00+0000`), which is not
 * ISO 8601 extended format (nor RFC 3339): insert the colon, then store the instant in UTC
 * (`2024-05-01T12:00:00.000Z`). Returns undefined for anything that is not a real date-time
 * (a missing offset, 2024-02-30, ...), so the caller can drop the item with a reason.
 */
export function normalizeTimestamp(value: string): string | undefined {
  const m = PLATFORM_TIMESTAMP.exec(value.trim());
  if (!m) return undefined;
  const [, local, offset] = m as unknown as [string, string, string];
  const withColon = offset === 'Z' || offset.includes(':') ? offset : `${offset.slice(0, 3)}:${offset.slice(3)}`;
  const iso = `${local}${withColon}`;
  // zod's check refuses impossible calendar dates that Date.parse would silently roll over.
  if (!isoWithOffset.safeParse(iso).success) return undefined;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
