import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * R-NET-2: a request body is read as UTF-8 or refused with 415. Express's form parser also
 * decodes ISO-8859-1, so a login form sent as `charset=iso-8859-1` was read (with its bytes
 * reinterpreted) while every other label got 415. Checked here for every request that carries a
 * body, before any parser: every `charset` parameter of Content-Type must be the label `utf-8`
 * (any case, quoted or not); a body without a charset is UTF-8 by default. Aliases such as `utf8`
 * are refused too: they are not the IANA name, and a client that cannot spell the one label has
 * a fair chance of getting the bytes wrong as well.
 */
const CHARSET_PARAM = /(?:^|;)\s*charset\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))/gi;

export function charsetsOf(contentType: string): string[] {
  return [...contentType.matchAll(CHARSET_PARAM)].map((m) => (m[1] ?? m[2] ?? '').replace(/\\(.)/g, '$1'));
}

/** type-is's notion: a body comes when Transfer-Encoding or a Content-Length is sent. */
function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
}

export function utf8BodiesOnly(): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const type = req.headers['content-type'];
    if (!type || !hasBody(req)) return next();
    const refused = charsetsOf(type).find((c) => c.toLowerCase() !== 'utf-8');
    if (refused === undefined) return next();
    // The error handler (errors.ts) answers body-parser's own type as a short 415.
    next(
      Object.assign(new Error(`unsupported charset ${JSON.stringify(refused.slice(0, 40))}`), {
        status: 415,
        type: 'charset.unsupported',
      }),
    );
  };
}
