import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * Graceful shutdown of an HTTP server: stop accepting connections, close the idle keep-alive
 * ones, let the requests in flight finish (an OAuth callback exchanging its code, a dashboard
 * action) and close their connections after the response, and after `timeoutMs` close whatever
 * is still open. Node's http.Server has the parts (close, closeIdleConnections,
 * closeAllConnections) but not the sequence, nor a count of what was cut off; a library for these
 * thirty lines (http-terminator, stoppable) would be one more dependency for the same calls.
 */
export interface Drainable {
  /** True from the moment drain() is called: readiness says so (/serving answers 503). */
  readonly draining: boolean;
  /** Requests being answered now. */
  readonly inFlight: number;
  drain(timeoutMs: number): Promise<{ cutOff: number }>;
}

export function drainable(server: Server): Drainable {
  let draining = false;
  const open = new Set<ServerResponse>();
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    open.add(res);
    res.once('close', () => open.delete(res));
    // A request that arrives on a kept-alive connection while draining is answered, and the
    // connection closed after it, so the client opens its next one to another replica.
    if (draining && !res.headersSent) res.setHeader('Connection', 'close');
  });
  return {
    get draining() {
      return draining;
    },
    get inFlight() {
      return open.size;
    },
    drain(timeoutMs) {
      draining = true;
      for (const res of open) if (!res.headersSent) res.setHeader('Connection', 'close');
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          const cutOff = open.size;
          server.closeAllConnections();
          resolve({ cutOff });
        }, timeoutMs);
        timer.unref();
        // server.close calls back once every connection has ended.
        server.close(() => {
          clearTimeout(timer);
          resolve({ cutOff: 0 });
        });
        server.closeIdleConnections();
      });
    },
  };
}
