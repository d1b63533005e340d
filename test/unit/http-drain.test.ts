import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { drainable } from '../../src/http/drain.ts';
import { healthRoutes } from '../../src/http/health.ts';

/**
 * serve's shutdown (src/http/drain.ts) over real sockets: a request in flight when SIGTERM comes
 * (an OAuth callback exchanging its code) is answered, a new connection is refused, /serving says
 * 503 to whoever still asks on a kept-alive connection, and what outlives the timeout is cut off.
 */
const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.closeAllConnections();
});

function start(handler: (release: Promise<void>) => express.RequestHandler) {
  let open!: () => void;
  const released = new Promise<void>((resolve) => (open = resolve));
  const app = express();
  const shutdown: { drain?: ReturnType<typeof drainable> } = {};
  app.use(healthRoutes({ draining: () => shutdown.drain?.draining === true }));
  app.get('/slow', handler(released));
  const server = createServer(app);
  servers.push(server);
  const drain = drainable(server);
  shutdown.drain = drain;
  return new Promise<{ port: number; release: () => void; drain: ReturnType<typeof drainable> }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ port: (server.address() as AddressInfo).port, release: open, drain }),
    ),
  );
}

function get(port: string | number, path: string, agent?: import('node:http').Agent) {
  return new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body, connection: res.headers.connection }));
    });
    req.on('error', reject);
    req.end();
  });
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setImmediate(r));
};

describe('serve shutdown: drain', () => {
  it('answers the request in flight, refuses new connections, and resolves once it is done', async () => {
    const { port, release, drain } = await start((released) => async (_req, res) => {
      await released;
      res.send('callback done');
    });
    const inFlight = get(port, '/slow');
    await until(() => drain.inFlight === 1);
    const drained = drain.drain(10_000);
    await expect(get(port, '/serving')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    release();
    expect(await inFlight).toEqual({ status: 200, body: 'callback done', connection: 'close' });
    expect(await drained).toEqual({ cutOff: 0 });
  });

  it('/serving: 200 while serving, 503 once draining, whatever the dependencies say', async () => {
    let draining = false;
    const app = express().use(healthRoutes({ draining: () => draining }));
    const server = createServer(app);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    expect(await get(port, '/serving')).toMatchObject({ status: 200, body: '{"status":"serving"}' });
    draining = true;
    expect(await get(port, '/serving')).toMatchObject({ status: 503, body: '{"status":"draining"}' });
  });

  it('cuts off what is still running after the timeout, and counts it', async () => {
    const { port, drain } = await start(() => () => undefined); // never answers
    const hung = get(port, '/slow').catch((e: NodeJS.ErrnoException) => e.code);
    await until(() => drain.inFlight === 1);
    expect(await drain.drain(50)).toEqual({ cutOff: 1 });
    expect(await hung).toBe('ECONNRESET');
  });
});
