import type { NextFunction, Request, Response } from 'express';
import { isDatabaseUnreachable } from '../store/db.ts';
import type { Logger } from '../util/logger.ts';

/**
 * The last error handler of `feedmirror serve`. A client's mistake is a 4xx with one short line,
 * logged at info level (it is not the server's problem and must not page anyone): malformed
 * percent-encoding in a path (Express marks it 400), bodies over their size or parameter limit
 * (413), a charset or encoding we do not read (415), a body that does not parse or was cut short
 * (400). Redis out of reach is a 503 in words (sessions and the throttle live there), and so is
 * PostgreSQL out of reach (the dashboard's accounts and events live there). Anything
 * else is a 500 whose details (redacted) go to the log, never to the response.
 */
const CLIENT_ERRORS: Record<string, { status: number; text: string }> = {
  'entity.too.large': { status: 413, text: 'The request body is too large.' },
  'parameters.too.many': { status: 413, text: 'The request has too many parameters.' },
  'charset.unsupported': { status: 415, text: 'Unsupported charset: send UTF-8.' },
  'encoding.unsupported': { status: 415, text: 'Unsupported content encoding.' },
  'entity.parse.failed': { status: 400, text: 'The request body could not be read.' },
  'entity.verify.failed': { status: 400, text: 'The request body could not be read.' },
  'request.aborted': { status: 400, text: 'The request body was cut short.' },
  'request.size.invalid': { status: 400, text: 'The request body was cut short.' },
  'stream.encoding.set': { status: 400, text: 'The request body could not be read.' },
};

function clientError(err: unknown): { status: number; text: string } | null {
  const e = err as { type?: unknown; status?: unknown; statusCode?: unknown } | null;
  if (e && typeof e.type === 'string' && CLIENT_ERRORS[e.type]) return CLIENT_ERRORS[e.type]!;
  const status = typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 0;
  if (err instanceof URIError || (status === 400 && err instanceof Error && /URI/.test(err.message)))
    return { status: 400, text: 'Malformed address: bad percent-encoding.' };
  if (status >= 400 && status < 500) return { status, text: 'Bad request.' };
  return null;
}

/** Whether errorHandler answers this error as the client's mistake (a 4xx), not the server's. */
export function isClientError(err: unknown): boolean {
  return clientError(err) !== null;
}

export function errorHandler(logger: Logger) {
  return (err: Error, req: Request, res: Response, _next: NextFunction) => {
    const known = clientError(err);
    if (known) {
      logger.info(
        {
          status: known.status,
          reason: (err as { type?: string }).type ?? err.name,
          method: req.method,
          client: req.ip,
        },
        'bad request refused',
      );
      if (!res.headersSent)
        res.status(known.status).set('Cache-Control', 'no-store').type('text/plain').send(`${known.text}\n`);
      return;
    }
    if (isRedisDown(err)) {
      // Sessions and the login throttle live in Redis: without it nobody can log in. Say so.
      logger.error({ err, path: req.path }, 'request failed: Redis is unreachable (sessions, login throttle)');
      if (!res.headersSent)
        res
          .status(503)
          .set({ 'Retry-After': '30', 'Cache-Control': 'no-store' })
          .type('text/plain')
          .send(
            'The dashboard cannot reach its session store (Redis) right now; try again in a minute. The operator can find the details in the server log.\n',
          );
      return;
    }
    if (isDatabaseUnreachable(err)) {
      // A dependency outage, not a bug: a plain 503 that says what is missing and to retry.
      logger.error({ err, path: req.path }, 'request failed: PostgreSQL is unreachable');
      if (!res.headersSent)
        res
          .status(503)
          .set({ 'Retry-After': '30', 'Cache-Control': 'no-store' })
          .type('text/plain')
          .send(
            'The dashboard cannot reach its database (PostgreSQL) right now; try again in a minute. The operator can find the details in the server log.\n',
          );
      return;
    }
    logger.error({ err, path: req.path }, 'request failed');
    if (!res.headersSent)
      res
        .status(500)
        .type('text/plain')
        .send('Something went wrong on the server; the operator can find the details in its log.\n');
  };
}

/** ioredis gave up on a command (no connection after its retries) or the connection is gone. */
function isRedisDown(err: unknown): boolean {
  const e = err as { name?: unknown; message?: unknown } | null;
  return (
    e?.name === 'MaxRetriesPerRequestError' ||
    (typeof e?.message === 'string' && /^Connection is closed\.?$|Stream isn't writeable/.test(e.message))
  );
}
