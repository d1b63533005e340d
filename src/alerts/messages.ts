/**
 * Helpers of the alert emails. The emails themselves are rendered from templates
 * (src/alerts/templates.ts, one code path for every email); they are built from metadata only,
 * so no token can end up in one, and the mailer still redacts as a last guard (R-TOK-11).
 */
export { humanDate } from './templates.ts';
export type { RenderedEmail as Email } from './templates.ts';

/** Where the operator invites an owner to log in again (the dashboard's accounts page). */
export function connectUrlFor(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/dashboard`;
}
