/**
 * The one redaction helper (R-TOK-11, R-LNK-7, R-MED-6). Everything that may reach a log line,
 * an error message, an email or an HTTP response passes through here when it could carry a URL
 * or a secret. Tokens travel in query strings, so query strings are never kept.
 */

const SECRET_PARAMS = ['access_token', 'client_secret', 'code', 'refresh_token', 'token', 'state', 'password'];
const PARAM_RE = new RegExp(`\\b(${SECRET_PARAMS.join('|')})=([^&\\s"'<>]+)`, 'gi');
const URL_RE = /\bhttps?:\/\/[^\s"'<>]+/gi;
// A credential after "Bearer": a word with a digit or a symbol in it, or a long one. A plain
// English word ("give it to Prometheus as a bearer token") is prose, not a secret (registered
// secrets such as METRICS_TOKEN are scrubbed below whatever they look like).
const BEARER_RE = /\b(Bearer)\s+(?=[A-Za-z]*[0-9._~+/=-]|[A-Za-z]{16})[A-Za-z0-9._~+/=-]+/gi;

/** Secrets registered at start-up (app secret, encryption keys) are scrubbed wherever they appear. */
const registered = new Set<string>();

/** Register a value that must never be printed. Short values are ignored to avoid scrubbing noise. */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= 6) registered.add(value);
}

/** A URL without its query string and fragment: `https://host/path?…`. */
export function redactUrl(url: string): string {
  const q = url.search(/[?#]/);
  return q === -1 ? url : `${url.slice(0, q)}?…`;
}

/** Scrub URLs' query strings, secret-looking parameters and registered secrets from free text. */
export function redactText(text: string): string {
  let out = text.replace(URL_RE, (u) => redactUrl(u));
  out = out.replace(PARAM_RE, (_m, k: string) => `${k}=[redacted]`);
  out = out.replace(BEARER_RE, '$1 [redacted]');
  for (const s of registered) {
    if (out.includes(s)) out = out.split(s).join('[redacted]');
  }
  return out;
}

/**
 * redactText, except for `links`, kept verbatim (as written and HTML-escaped): the one-time link an
 * email exists to carry, such as an invitation's `/connect?invite=…`, which the query-string rule
 * would otherwise cut. A link is kept only when it is http(s) and carries no secret parameter
 * (access_token, code, …), no bearer credential and no registered secret; any other is redacted
 * like the rest of the text (R-TOK-11).
 */
export function redactTextKeeping(text: string, links: readonly string[]): string {
  const kept = links.filter(
    (l) =>
      /^https?:\/\/[^\s"'<>]+$/i.test(l) &&
      !new RegExp(PARAM_RE.source, 'i').test(l) &&
      !new RegExp(BEARER_RE.source, 'i').test(l) &&
      ![...registered].some((s) => l.includes(s)),
  );
  if (kept.length === 0) return redactText(text);
  const forms = kept.flatMap((l) => [l, escapeForHtml(l)]).sort((a, b) => b.length - a.length);
  // Each kept link becomes a placeholder no rule matches, then comes back after the redaction.
  let out = text;
  forms.forEach((f, i) => (out = out.split(f).join(`\uE000${i}\uE000`)));
  out = redactText(out);
  return out.replace(/\uE000(\d+)\uE000/g, (_m, i: string) => forms[Number(i)]!);
}

function escapeForHtml(s: string): string {
  return s.replace(
    /[&<>"'`]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' })[c] as string,
  );
}

/** Deeply redact a value for logging: strings are scrubbed, known secret keys are replaced. */
export function redactValue(value: unknown, depth = 0): unknown {
  if (depth > 8) return '[deep]';
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  // Dates are logged as expiry evidence (R-TOK-11): keep them (pino prints ISO), never walk them as objects.
  if (value instanceof Date) return value;
  if (value instanceof Error) return { name: value.name, message: redactText(value.message) };
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = isSecretKey(k) ? '[redacted]' : redactValue(v, depth + 1);
    }
    return out;
  }
  return value;
}

const SECRET_KEY_RE =
  /^(access_?token|accessToken|token|client_?secret|appSecret|app_secret|secret|password|encryptionKey|key|authorization|cookie)$/i;
export function isSecretKey(key: string): boolean {
  return SECRET_KEY_RE.test(key);
}
