import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a real service (Redis, PostgreSQL), so a test can take the service
 * "down" (connections dropped, new ones refused) and bring it back on the same port, or let only
 * the first N connections through.
 */
export interface TcpProxy {
  port: number;
  /** Drop every connection and refuse new ones (the port is closed). */
  down(): Promise<void>;
  /** Listen again on the same port. */
  up(): Promise<void>;
  /** From now on, connections after the first `n` (counted from the start) are dropped at once. */
  acceptOnly(n: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  let limit = Infinity;
  let server: Server | undefined;
  let port = 0;
  const listen = async () => {
    server = createServer((client) => {
      accepted++;
      if (accepted > limit) {
        client.destroy();
        return;
      }
      const upstream = createConnection(target);
      sockets.add(client);
      sockets.add(upstream);
      const end = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  };
  const down = async () => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await listen();
  return {
    get port() {
      return port;
    },
    down,
    up: listen,
    acceptOnly(n) {
      limit = n;
    },
    close: down,
  };
}
