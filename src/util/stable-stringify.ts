/**
 * JSON with object keys sorted and undefined fields left out, so equal content always gives equal
 * text: content hashes (src/feeds/slots.ts) and comparisons of BullMQ's stored job templates with
 * ours (jobs/schedules.ts).
 */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  // JSON.stringify is typed string, but gives undefined for undefined or a function.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
  return JSON.stringify(value) ?? 'null';
}
