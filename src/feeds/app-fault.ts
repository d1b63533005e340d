import type { PlatformError } from '../platform/errors.ts';
import { AppRestrictedError, AppSecretRefusedError } from '../platform/errors.ts';
import { DEFAULT_APP } from '../store/apps.ts';
import type { FeedDeps } from './deps.ts';

/**
 * An app's fault met by a sync or a copy: recorded against the app (its operator alerted once),
 * and the error the account's record keeps, naming the app to fix (health shows it by its kind).
 */
export async function appFaulted(
  deps: Pick<FeedDeps, 'apps'>,
  app: string | null,
  err: AppRestrictedError | AppSecretRefusedError,
): Promise<PlatformError> {
  await deps.apps?.fault(app, err);
  const name = app ?? DEFAULT_APP;
  const details = {
    ...(err.status !== undefined ? { status: err.status } : {}),
    ...(err.code !== undefined ? { code: err.code } : {}),
    ...(err.operation !== undefined ? { operation: err.operation } : {}),
  };
  const named =
    err instanceof AppRestrictedError
      ? new AppRestrictedError(`app ${name}: ${err.message}`, details)
      : new AppSecretRefusedError(`app ${name}: ${err.message}`, details);
  named.app = name;
  return named;
}
