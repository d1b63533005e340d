import { createServer } from 'node:net';

/**
 * A port free on `host` now (bound once, then released): for a server a test is about to start
 * there. Shared because every serve-, Redis- and browser-stack set-up needs one before it starts.
 * Bind to '0.0.0.0' for a server that listens on every address, as in production.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A local port that nothing listens on (bound once, then released): connecting is refused at once. */
export async function closedPort(): Promise<number> {
  return freePort('127.0.0.1');
}
