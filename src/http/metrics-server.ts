import type { Server } from 'node:http';
import express from 'express';
import { healthRoutes } from './health.ts';
import type { Logger } from '../util/logger.ts';
import type { Metrics } from '../metrics/index.ts';

/**
 * The worker's own metrics listener (METRICS_PORT): /metrics and /healthz only. A worker serves
 * no other HTTP; what it counts (platform calls, copies, sync durations, failures, rate-limit
 * waits) happens in its process and would be invisible to the server's /metrics. /readyz has no
 * dependency to check here and always answers ready: the worker's health is the process itself.
 */
export interface MetricsServer {
  /** http://host:port as bound (port 0 resolved). */
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(opts: {
  metrics: Metrics;
  host: string;
  port: number;
  logger?: Logger;
}): Promise<MetricsServer> {
  const app = express();
  app.disable('x-powered-by');
  app.use(healthRoutes({ metrics: opts.metrics, ...(opts.logger ? { logger: opts.logger } : {}) }));
  const server: Server = app.listen(opts.port, opts.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
