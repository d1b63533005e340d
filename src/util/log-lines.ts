import { redactText } from './redact.ts';

/**
 * Log records as short lines for a person at a terminal: `warning: <message> (key=value, …)`, no
 * timestamp, no process fields. pino writes each record as one JSON line; this turns it into a
 * human one. pino-pretty would do it too, but it is a dependency of its own for a dozen lines,
 * and its output (colours, timestamps, every field on lines of their own) is more than a command's
 * terminal wants.
 */
const LABELS: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warning',
  50: 'error',
  60: 'fatal',
};
/** Fields every record carries, or that say nothing to a person reading a terminal. */
const SKIPPED = new Set(['level', 'time', 'name', 'msg', 'pid', 'hostname', 'err', 'trace_id', 'span_id']);
/** A line stays a line: at most this many fields, each value cut at this many characters. */
const MAX_FIELDS = 6;
const MAX_VALUE = 80;

/** One pino record (as pino serialised it, already redacted) as one human line, ending in a newline. */
export function humanLogLine(record: Record<string, unknown>): string {
  const level = LABELS[record.level as number] ?? String(record.level);
  const msg = typeof record.msg === 'string' ? record.msg : '';
  const err = record.err as { message?: unknown } | undefined;
  const reason = err && typeof err.message === 'string' && !msg.includes(err.message) ? `: ${err.message}` : '';
  const fields = Object.entries(record)
    .filter(([k, v]) => !SKIPPED.has(k) && v !== undefined && v !== null)
    .slice(0, MAX_FIELDS)
    .map(([k, v]) => `${k}=${fieldValue(v)}`);
  const details = fields.length > 0 ? ` (${fields.join(', ')})` : '';
  // Already redacted when pino wrote the record; once more on the line itself, so nothing a
  // formatter puts together here can carry a token, a request URL's query or a registered secret (R-TOK-11, R-LNK-7).
  return redactText(`${level}: ${msg}${reason}${details}`.replace(/\s*\n\s*/g, ' ')) + '\n';
}

function fieldValue(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > MAX_VALUE ? `${s.slice(0, MAX_VALUE - 1)}…` : s;
}

/**
 * A pino destination that writes each record to `out` as a human line. A record that is not JSON
 * (it never is) goes through as it came, redacted.
 */
export function humanLogStream(out: { write(s: string): unknown }): { write(line: string): void } {
  return {
    write(line: string) {
      let record: unknown;
      try {
        record = JSON.parse(line);
      } catch {
        out.write(redactText(line));
        return;
      }
      out.write(humanLogLine(record as Record<string, unknown>));
    },
  };
}
