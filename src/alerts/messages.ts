/**
 * The operator's alert emails (R-TOK-9, R-TOK-10). Pure: they name the account, the expiry (ISO
 * date and human), the days left, why, what to do and the dashboard link (where the operator
 * invites the owner to log in again: /connect is closed to anyone without an invitation). They are built from
 * metadata only, so no token can end up in one; the mailer still redacts as a last guard.
 */

export interface EmailAccount {
  id: string;
  username: string;
}

export interface Email {
  subject: string;
  text: string;
  html: string;
}

/** Where the operator invites an owner to log in again (the dashboard's accounts page). */
export function connectUrlFor(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/dashboard`;
}

const invite = (who: string) =>
  `What to do: invite the owner of ${who} to log in again: "Invite an owner" on the dashboard below, or \`feedmirror accounts invite\`, and send them the link; they log in with that account.`;

function isoDate(d: Date): string {
  return d.toISOString().slice(0, 10);
}

/** "Saturday, 21 February 2026, 15:00 UTC": unambiguous for any reader. */
export function humanDate(d: Date): string {
  const day = d.toLocaleDateString('en-GB', {
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  });
  const time = d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', hour12: false, timeZone: 'UTC' });
  return `${day}, ${time} UTC`;
}

function inDays(daysLeft: number): string {
  if (daysLeft < 1) return 'in less than a day';
  return `in ${daysLeft} day${daysLeft === 1 ? '' : 's'}`;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function toHtml(paragraphs: string[], link: string): string {
  const body = paragraphs.map((p) => `<p>${escapeHtml(p).replace(/\n/g, '<br>')}</p>`).join('\n');
  const a = escapeHtml(link);
  return `<!doctype html><html><body>\n${body}\n<p><a href="${a}">${a}</a></p>\n</body></html>\n`;
}

export function expiryEmail(input: {
  account: EmailAccount;
  expiresAt: Date;
  daysLeft: number;
  reason?: string;
  connectUrl: string;
}): Email {
  const { account, expiresAt, daysLeft, connectUrl } = input;
  const who = `@${account.username}`;
  const subject = `feedmirror: the token of ${who} expires ${inDays(daysLeft)} (${isoDate(expiresAt)})`;
  const why =
    input.reason ??
    'feedmirror refreshes tokens on its own, so this usually means the refresh keeps failing (see the dashboard for the last error).';
  const paragraphs = [
    `The access token of ${who} (account ${account.id}) expires ${inDays(daysLeft)}: on ${isoDate(expiresAt)} (${humanDate(expiresAt)}).`,
    `Why: ${why}`,
    `When it expires the feed stops updating: the published feed and the mirrored images stay, but new posts no longer appear. An expired token cannot be refreshed; only a new login fixes it.`,
    invite(who),
  ];
  const text = `${paragraphs.join('\n\n')}\n\n${connectUrl}\n`;
  return { subject, text, html: toHtml(paragraphs, connectUrl) };
}

export function reauthEmail(input: {
  account: EmailAccount;
  /** e.g. 'the account password was changed', 'the token expired on 2026-02-21' */
  reason: string;
  connectUrl: string;
  expiresAt?: Date | null;
}): Email {
  const { account, reason, connectUrl } = input;
  const who = `@${account.username}`;
  const subject = `feedmirror: ${who} must log in again`;
  const paragraphs = [
    `The connection to ${who} (account ${account.id}) no longer works: ${reason}.`,
    ...(input.expiresAt
      ? [`The stored token's expiry: ${isoDate(input.expiresAt)} (${humanDate(input.expiresAt)}).`]
      : []),
    `feedmirror has stopped calling the platform for this account. The published feed and the mirrored images stay, but new posts no longer appear.`,
    `${invite(who)} Syncing resumes by itself.`,
  ];
  const text = `${paragraphs.join('\n\n')}\n\n${connectUrl}\n`;
  return { subject, text, html: toHtml(paragraphs, connectUrl) };
}
