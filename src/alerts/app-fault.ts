import type { ErrorKind } from '../util/error-kinds.ts';
import { accountsPerApp } from '../store/apps.ts';
import { connectUrlFor } from './messages.ts';
import type { SweepDeps } from './sweep.ts';
import { renderEmail } from './templates.ts';

/**
 * The operator's alert when the platform refuses an app's secret or restricts the app: once per
 * fault (the app's row records it; a new fault after it was fixed alerts again), naming the app
 * to fix and what to do. Never the secret, never an account owner: only the operator can fix it.
 */
export async function alertAppFault(
  deps: Pick<SweepDeps, 'db' | 'mailer' | 'publicUrl' | 'emailTemplates' | 'brand' | 'logger'>,
  app: string,
  error: { errorKind: ErrorKind },
): Promise<void> {
  const secret = error.errorKind === 'app_secret_refused';
  const email = renderEmail(
    'operator-app',
    {
      app,
      cause: secret ? `refuses the secret of app ${app}` : `restricted app ${app}`,
      fix: secret
        ? `put the app's current secret (from the platform's developer settings) in a file and run: feedmirror apps set ${app} --secret-file <file>. Connecting and reconnecting through app ${app} work again at once.`
        : `open app ${app} in the platform's developer settings and resolve the restriction; its accounts sync again on their next run.`,
      accounts: (await accountsPerApp(deps.db)).get(app) ?? 0,
      dashboardUrl: `${connectUrlFor(deps.publicUrl)}/apps`,
      brand: deps.brand,
    },
    deps.emailTemplates,
  );
  await deps.mailer.send(email);
  deps.logger.warn({ app, kind: error.errorKind }, `alert sent: app ${app} needs fixing`);
}
