import { createHmac, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * The dashboard's previews render with the widget script, which fetches its document without
 * cookies (credentials: 'omit', as on every site): the session cannot reach a preview's document.
 * A page behind the login hands the script the document's path signed with the session key
 * (`?k=`) instead, good for that path only. What such a document holds is public already (a
 * widget's published document, an account's published feed as a widget), without a views address.
 */
const PARAM = 'k';

function signature(key: Buffer, path: string): string {
  return createHmac('sha256', key).update(`preview\0${path}`).digest('base64url');
}

/** `path?k=<signature>&<query>`: the address a preview page gives the widget script. */
export function signedPreviewPath(key: Buffer, path: string, query: Record<string, string> = {}): string {
  const q = new URLSearchParams({ [PARAM]: signature(key, path), ...query });
  return `${path}?${q.toString()}`;
}

/** Whether the request carries the signature of its own path. */
export function hasPreviewSignature(key: Buffer, req: Request): boolean {
  const given = req.query[PARAM];
  if (typeof given !== 'string') return false;
  const expected = Buffer.from(signature(key, `${req.baseUrl}${req.path}`));
  const got = Buffer.from(given);
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/** Lets a signed request through; any other goes on to the routes behind the login. */
export function requirePreviewSignature(key: Buffer): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) =>
    hasPreviewSignature(key, req) ? next() : next('router');
}
