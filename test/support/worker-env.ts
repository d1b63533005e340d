import type { Simulator } from '../../src/simulator/index.ts';

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
    GRAPH_URL: o.sim.graphUrl,
    OAUTH_TOKEN_URL: o.sim.oauthTokenUrl,
    AUTHORIZE_URL: o.sim.authorizeUrl,
    APP_ID: o.sim.appId,
    APP_SECRET: o.sim.appSecret,
    TOKEN_ENCRYPTION_KEY: o.key,
    STORAGE_URL: o.storageDir,
    MEDIA_PUBLIC_URL: 'http://media.example.test/',
    MEDIA_ALLOWED_HOSTS: o.sim.imageHost,
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
