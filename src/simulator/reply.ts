import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { html, type Html } from '../util/html.ts';

/** What a handler answers; the server writes it (and adds the usage headers on the graph host). */
export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** A stream is piped (a large video file, made as it is read). */
  body: string | Buffer | Readable;
  /** The account the call was made for: its usage goes into X-Business-Use-Case-Usage. */
  accountId?: string | undefined;
}

export function json(status: number, value: unknown, accountId?: string): Reply {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    body: JSON.stringify(value),
    accountId,
  };
}

/** An HTML page of the platform (its login, an error page), its body built with `html`. */
export function htmlPage(status: number, title: string, body: Html, head: Html | '' = ''): Reply {
  const page = html`<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>${head}</head><body>${body}</body></html>`;
  return { status, headers: { 'content-type': 'text/html; charset=utf-8' }, body: String(page) };
}

export function text(status: number, body: string, contentType = 'text/plain; charset=utf-8'): Reply {
  return { status, headers: { 'content-type': contentType }, body };
}

/** The Graph error envelope: {error:{message,type,code,error_subcode,fbtrace_id}}. */
export function graphError(
  status: number,
  code: number,
  message: string,
  opts: { subcode?: number | undefined; type?: string; accountId?: string | undefined; transient?: boolean } = {},
): Reply {
  const error: Record<string, unknown> = { message, type: opts.type ?? 'OAuthException', code };
  if (opts.subcode !== undefined) error.error_subcode = opts.subcode;
  if (opts.transient) error.is_transient = true;
  error.fbtrace_id = `A${randomBytes(12).toString('base64url')}`;
  return json(status, { error }, opts.accountId);
}

/** The login endpoint's own error shape: {error_type, code, error_message}. */
export function loginError(code: number, message: string): Reply {
  return json(400, { error_type: 'OAuthException', code, error_message: message });
}

/** "(#100) ..." refusals of parameters and fields. */
export function paramError(message: string, accountId?: string): Reply {
  return graphError(400, 100, `(#100) ${message}`, { accountId });
}

/** An id that is not there (or not this token's): the platform's wording, code 100 / subcode 33. */
export function unknownObject(id: string, accountId?: string): Reply {
  return graphError(
    400,
    100,
    `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
    { subcode: 33, type: 'GraphMethodException', accountId },
  );
}
