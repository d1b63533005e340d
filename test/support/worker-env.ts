import type { Simulator } from '../../src/simulator/index.ts';

/**
 * The variables that make the simulator feedmirror's platform: the app, the graph API and the
 * login endpoints. Every serve, worker and CLI a test starts against the simulator is given them.
 */
export function platformEnv(sim: Simulator): Record<string, string> {
  return {
    APP_ID: sim.appId,
    APP_SECRET: sim.appSecret,
    GRAPH_URL: sim.graphUrl,
    AUTHORIZE_URL: sim.authorizeUrl,
    OAUTH_TOKEN_URL: sim.oauthTokenUrl,
  };
}

/** platformEnv, and the simulator's image host as the one host images are copied from. */
export function simulatorEnv(sim: Simulator): Record<string, string> {
  return { ...platformEnv(sim), MEDIA_ALLOWED_HOSTS: sim.imageHost };
}

/** The environment of a real `feedmirror worker` process pointed at the test services. */
export function workerEnv(o: {
  sim: Simulator;
  databaseUrl: string;
  redis: { url: string; prefix: string };
  key: string;
  clockFile: string;
  storageDir: string;
  smtpUrl?: string;
  extra?: Record<string, string>;
}): Record<string, string> {
  return {
    DATABASE_URL: o.databaseUrl,
    REDIS_URL: o.redis.url,
    REDIS_PREFIX: o.redis.prefix,
    ...simulatorEnv(o.sim),
    TOKEN_ENCRYPTION_KEY: o.key,
    STORAGE_URL: o.storageDir,
    MEDIA_PUBLIC_URL: 'http://media.example.test/',
    ...(o.smtpUrl
      ? { SMTP_URL: o.smtpUrl, ALERT_EMAIL_TO: 'ops@example.test' }
      : { OUTBOX_DIR: `${o.storageDir}/outbox` }),
    PUBLIC_URL: 'http://feedmirror.example.test',
    FEEDMIRROR_CLOCK_FILE: o.clockFile,
    HTTP_MAX_RETRIES: '0',
    LOG_LEVEL: 'info',
    ...o.extra,
  };
}
