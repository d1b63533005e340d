import { ConfigError, loadConfig, type Config } from '../config.ts';
import { TokenCipher } from '../store/crypto.ts';
import { systemClock } from '../util/clock.ts';

/** What a long-running role needs beyond a parseable configuration. */
export type Role = 'migrate' | 'worker' | 'serve';

export type Preflight = { ok: true; config: Config } | { ok: false; problems: string[] };

/**
 * The configuration checks a role runs before it touches any service, as one list of problems
 * (each names the variable, never its value): the whole configuration parses; worker and serve
 * have a usable TOKEN_ENCRYPTION_KEY; a worker that sends mail knows whom to (ALERT_EMAIL_TO);
 * serve is not exposed without a dashboard login. `feedmirror doctor` reports the same list.
 */
export async function preflight(env: NodeJS.ProcessEnv, role: Role): Promise<Preflight> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, problems: err.problems };
    throw err;
  }
  const problems: string[] = [];
  if (role === 'worker' || role === 'serve') {
    try {
      TokenCipher.fromEnv(config.TOKEN_ENCRYPTION_KEY);
    } catch (err) {
      const m = (err as Error).message;
      problems.push(m.startsWith('TOKEN_ENCRYPTION_KEY') ? m : `TOKEN_ENCRYPTION_KEY: ${m}`);
    }
  }
  if (role === 'worker' && config.SMTP_URL && !config.ALERT_EMAIL_TO) {
    problems.push('ALERT_EMAIL_TO: required when SMTP_URL is set (the address that receives alerts)');
  }
  if (role === 'worker' || role === 'serve') {
    // An override folder's template that cannot be used stops the start, rather than an alert
    // later: one line naming the file, its line and what is wrong.
    const { loadEmailTemplates } = await import('../alerts/templates.ts');
    try {
      if (config.EMAIL_TEMPLATES_DIR !== undefined) loadEmailTemplates(config.EMAIL_TEMPLATES_DIR);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (role === 'serve') {
    // The same rule the server applies when it starts (src/http/auth/settings.ts).
    const { resolveDashboardAuth } = await import('../http/auth/settings.ts');
    try {
      resolveDashboardAuth({
        host: config.HOST,
        user: config.DASHBOARD_USER,
        password: config.DASHBOARD_PASSWORD,
        secret: config.TOKEN_ENCRYPTION_KEY,
        publicUrl: config.PUBLIC_URL,
        clock: systemClock,
      });
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return problems.length ? { ok: false, problems } : { ok: true, config };
}
