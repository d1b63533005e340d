import type { z } from 'zod';
import {
  AppRestrictedError,
  AppSecretRefusedError,
  InsufficientDeveloperRoleError,
  MalformedResponseError,
  PasswordChangedError,
  PlatformError,
  PlatformRequestError,
  RateLimitedError,
  TokenExpiredError,
  TokenInvalidError,
  TokenTooYoungError,
  TransientError,
  TOKEN_SUBCODES,
} from './errors.ts';
import { parseUsage, retryAfterMs, type PlatformUsage } from './rate-limit.ts';
import { redactText } from '../util/redact.ts';

/**
 * The one place where a failed platform call becomes a typed error (R-TOK-3). Every call of the
 * client goes through `mapPlatformError`. Messages name the operation, never a URL, a query
 * string, a token or the response body; the platform's own message is scrubbed of the secrets
 * the call carried before it is kept.
 */

/** Operations in words: what appears in messages and logs instead of a URL (R-LNK-7). */
export type Operation = 'code exchange' | 'token exchange' | 'token refresh' | 'profile' | 'media list' | 'media item';

/** Error codes the platform uses for throttling (R-OWN-1). */
export const RATE_LIMIT_CODES: ReadonlySet<number> = new Set([4, 17, 32, 613]);
/** Graph-style "unknown error" / "service temporarily unavailable": the platform's own advice is to retry. */
export const TRANSIENT_CODES: ReadonlySet<number> = new Set([1, 2]);
export const TOKEN_INVALID_CODE = 190;
/** "Error validating client secret": the app's secret, not the account's token. */
export const APP_SECRET_CODE = 101;
/** The app is restricted by the platform (blocked for a policy): every call of its accounts. */
export const APP_RESTRICTED_CODE = 368;
export const SUBCODE_PASSWORD_CHANGED = 460;
export const SUBCODE_EXPIRED = 463;

const DEVELOPER_ROLE_RE = /insufficient developer role/i;
/** How a refresh of a token younger than 24 hours is worded (R-TOK-5); not documented, so broad. */
const TOO_YOUNG_RE = /24[ -]?h|too (young|new|recent)|not (yet )?old enough|at least (one|1) day/i;
const MAX_PLATFORM_MESSAGE = 300;

export type Failure =
  /** The platform answered (any status) with an error, or a non-success status. */
  | { kind: 'response'; status: number; body: unknown; headers: Headers }
  /** No usable answer: timeout, connection reset or refused. */
  | { kind: 'transport'; error: unknown; timeoutMs: number }
  /** An answer that is not what the spec says (bad JSON, HTML, wrong types, too large). */
  | { kind: 'malformed'; status: number; detail: string };

export interface FailureContext {
  operation: Operation;
  now: Date;
  /** Values this call carried (token, app secret, code): scrubbed from anything kept. */
  secrets: readonly string[];
}

export interface PlatformErrorInfo {
  code?: number | undefined;
  subcode?: number | undefined;
  message?: string | undefined;
  type?: string | undefined;
}

function num(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return undefined;
}
function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

/**
 * The error object of a body in any of the platform's shapes: Graph `{error:{code,error_subcode,
 * message,type}}`, the login endpoint's `{error_type,code,error_message}`, OAuth `{error,
 * error_description}`. Undefined when the body carries no error.
 */
export function extractErrorInfo(body: unknown): PlatformErrorInfo | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  if (b.error && typeof b.error === 'object') {
    const e = b.error as Record<string, unknown>;
    return {
      code: num(e.code),
      subcode: num(e.error_subcode),
      message: str(e.message) ?? str(e.error_user_msg),
      type: str(e.type),
    };
  }
  if (str(b.error_type) || str(b.error_message)) {
    return { code: num(b.code), subcode: num(b.error_subcode), message: str(b.error_message), type: str(b.error_type) };
  }
  if (str(b.error)) return { message: str(b.error_description) ?? str(b.error), type: str(b.error) };
  return undefined;
}

/** Remove the call's own secrets and anything secret-looking; cap the length. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('[redacted]');
  out = redactText(out);
  return out.length > MAX_PLATFORM_MESSAGE ? `${out.slice(0, MAX_PLATFORM_MESSAGE)}…` : out;
}

function codeText(status: number, info: PlatformErrorInfo | undefined): string {
  const parts = [`HTTP ${status}`];
  if (info?.code !== undefined) parts.push(`code ${info.code}${info.subcode !== undefined ? `/${info.subcode}` : ''}`);
  return parts.join(', ');
}

function transportCode(error: unknown): string | undefined {
  // undici: TypeError('fetch failed', { cause: { code: 'ECONNRESET' } }); only the code is kept,
  // never the error itself (it can hold the URL).
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = cause?.code ?? (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[A-Z_]+$/.test(code) ? code : undefined;
}

/** Whether a transport failure certainly happened before the request reached the platform. */
export function failedBeforeSending(error: unknown): boolean {
  const code = transportCode(error);
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
}

function isTimeout(error: unknown): boolean {
  const name = (error as { name?: unknown } | undefined)?.name;
  return name === 'TimeoutError' || name === 'AbortError';
}

/** Map any failure of any platform call to its typed error. */
export function mapPlatformError(failure: Failure, ctx: FailureContext): PlatformError {
  const op = ctx.operation;
  if (failure.kind === 'transport') {
    // Timeouts and connection resets: the platform may answer next time (retried with backoff).
    if (isTimeout(failure.error))
      return new TransientError(`${op}: no answer within ${failure.timeoutMs} ms`, { operation: op });
    const code = transportCode(failure.error);
    return new TransientError(`${op}: connection to the platform failed${code ? ` (${code})` : ''}`, { operation: op });
  }
  if (failure.kind === 'malformed') {
    return new MalformedResponseError(
      `${op}: malformed response from the platform (HTTP ${failure.status}): ${scrub(failure.detail, ctx.secrets)}`,
      {
        operation: op,
        status: failure.status,
      },
    );
  }

  const { status, body, headers } = failure;
  const info = extractErrorInfo(body);
  const platformMessage = info?.message ? scrub(info.message, ctx.secrets) : undefined;
  const details = { status, code: info?.code, subcode: info?.subcode, operation: op, platformMessage };
  const said = platformMessage ? `: ${platformMessage}` : '';
  const codes = codeText(status, info);

  // R-TOK-10, R-OWN-4: any 190 means the owner must log in again; 463 and 460 have their own classes.
  if (info?.code === TOKEN_INVALID_CODE) {
    const reason = (info.subcode !== undefined && TOKEN_SUBCODES[info.subcode]) || 'the token was rejected';
    const message = `${op}: ${reason} (${codes}); the account owner must log in again and reconnect the account`;
    if (info.subcode === SUBCODE_EXPIRED) return new TokenExpiredError(message, details);
    if (info.subcode === SUBCODE_PASSWORD_CHANGED) return new PasswordChangedError(message, details);
    return new TokenInvalidError(message, details);
  }
  // The operator's app, not the account: never a reason to ask the owner to log in again.
  if (info?.code === APP_SECRET_CODE || (info?.message && /error validating client secret/i.test(info.message))) {
    return new AppSecretRefusedError(
      `${op}: the platform refuses the app's secret (${codes}); give feedmirror the app's current secret (feedmirror apps set <app> --secret-file <file>, or APP_SECRET for the default app)`,
      details,
    );
  }
  if (info?.code === APP_RESTRICTED_CODE) {
    return new AppRestrictedError(
      `${op}: the platform restricted the app (${codes})${said}; fix the app in the platform's developer settings`,
      details,
    );
  }
  // R-TOK-14
  if (info?.message && DEVELOPER_ROLE_RE.test(info.message)) {
    return new InsufficientDeveloperRoleError(
      `${op}: insufficient developer role (${codes}): the app is in development mode and this account lacks the tester role; ` +
        'have the account owner accept the tester invitation in the account settings (Apps and websites, Tester invites), then retry',
      details,
    );
  }
  // R-OWN-1: throttled; the job layer backs off, the client never loops on it.
  if (status === 429 || (info?.code !== undefined && RATE_LIMIT_CODES.has(info.code))) {
    const usage: PlatformUsage | undefined = parseUsage(headers, ctx.now);
    const wait = retryAfterMs(headers, usage, ctx.now);
    return new RateLimitedError(
      `${op}: rate limited by the platform (${codes})${wait !== undefined ? `; retry in about ${Math.ceil(wait / 1000)} s` : ''}`,
      {
        ...details,
        retryAfterMs: wait,
        usage: usage ? { ...usage, at: usage.at.toISOString() } : undefined,
      },
    );
  }
  // R-TOK-5: a token younger than 24 hours cannot be refreshed yet.
  if (op === 'token refresh' && info?.message && TOO_YOUNG_RE.test(info.message)) {
    return new TokenTooYoungError(
      `${op}: the platform refuses to refresh a token younger than 24 hours (${codes}); retry later${said}`,
      details,
    );
  }
  if (status >= 500 || (info?.code !== undefined && TRANSIENT_CODES.has(info.code))) {
    return new TransientError(`${op}: the platform is temporarily failing (${codes})${said}`, details);
  }
  return new PlatformRequestError(`${op}: the platform refused the request (${codes})${said}`, details);
}

/** `data[3].like_count` from a zod path. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${String(p)}` : String(p);
  }
  return out || '(root)';
}

/** A zod failure in words that name the field and what was expected, never the value. */
export function describeZodError(error: z.ZodError, max = 3): string {
  const lines = error.issues.slice(0, max).map((issue) => {
    // zod 4 messages name types ("expected number, received string"), never the input value.
    const what = issue.message.replace(/^Invalid input: /, '');
    return `${formatPath(issue.path)}: ${what}`;
  });
  const more = error.issues.length > max ? ` (and ${error.issues.length - max} more)` : '';
  return lines.join('; ') + more;
}
