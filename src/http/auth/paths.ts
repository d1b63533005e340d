/** Where the dashboard lives: its cookies' Path, its login page, and where a login may lead. */
export const DASHBOARD_PATH = '/dashboard';

/** A `next` target inside the dashboard only (no open redirect to another site). */
export function safeNext(value: unknown): string {
  return typeof value === 'string' &&
    /^\/dashboard(\/[A-Za-z0-9_\-./]*)?(\?[A-Za-z0-9_\-=&.%]*)?$/.test(value) &&
    !value.includes('..')
    ? value
    : DASHBOARD_PATH;
}
