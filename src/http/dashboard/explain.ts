import { redactText } from '../../util/redact.ts';
import type { AccountWithExpiry } from '../../store/accounts.ts';

/**
 * Stored error texts (platform messages, codes, network errors) turned into what an operator can
 * act on. Pure; the original (redacted) text is kept as the detail.
 */
export interface Explained {
  /** One sentence: what happened and what to do. */
  summary: string;
  /** The stored text, redacted, for the curious and for support. */
  detail: string;
}

const RULES: Array<[RegExp, string]> = [
  // R-TOK-10 / R-OWN-4: any 190 means the owner must log in again; the subcode says why.
  [/\b190\/460\b|password (was )?changed|PasswordChanged/i, 'The owner changed their password, so the connection was cut. Ask them to connect the account again.'],
  [/\b190\/463\b|expired on|token.*expired|TokenExpired/i, 'The access expired before it could be renewed. Ask the owner to connect the account again.'],
  [/\b190\/458\b|app (was )?removed/i, 'The owner removed this app from their account. Ask them to connect again if they want the feed back.'],
  [/\b190\/459\b|checkpoint/i, 'The platform wants the owner to confirm their identity (a security checkpoint). Ask them to log in on the platform, then connect again.'],
  [/\b190\b|TokenInvalid|invalid (oauth|access) token/i, 'The platform no longer accepts this account\'s access. Ask the owner to connect the account again.'],
  [/developer role|InsufficientDeveloperRole/i, 'The app is in development mode and this account lacks the tester role. Add it as a tester in the app settings, or switch the app to live.'],
  [/personal account|PersonalAccount/i, 'This is a personal account; only professional (business or creator) accounts are supported. The owner can switch the account type in the platform app.'],
  [/scope|permission/i, 'A required permission was not granted. Ask the owner to connect again and approve every permission.'],
  [/rate.?limit|\b429\b|code (4|17|32|613)\b|RateLimited/i, 'The platform\'s rate limit was reached. feedmirror waits and retries on its own; nothing to do unless it lasts for hours.'],
  [/URL signature expired|signature expired/i, 'An image link expired before it was copied. It is renewed and copied on the next sync.'],
  [/too young|24 hours/i, 'The access is less than a day old and cannot be renewed yet. It will be renewed later on its own.'],
  [/ECONNREFUSED|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|timeout|timed out|unreachable|socket hang up|TransientError/i, 'The platform could not be reached. feedmirror retries on its own; check the network if it lasts.'],
  [/storage|ENOSPC|EACCES|S3/i, 'Copies or the feed could not be written to storage. Check the storage settings, space and permissions.'],
];

export function explainError(text: string | null | undefined): Explained | null {
  if (!text) return null;
  const detail = redactText(text).slice(0, 500);
  for (const [re, summary] of RULES) if (re.test(text)) return { summary, detail };
  return { summary: detail, detail };
}

/** The account's most pressing problem, if any, in operator words. */
export function lastProblem(a: Pick<AccountWithExpiry, 'status' | 'statusReason' | 'lastSyncError' | 'lastRefreshError' | 'hasToken' | 'daysLeft'>): Explained | null {
  if (a.status === 'reauth_required') {
    return explainError(a.statusReason) ?? { summary: 'The owner must connect the account again.', detail: '' };
  }
  if (a.status === 'disabled') return { summary: 'This account is disabled: nothing is synced or renewed.', detail: a.statusReason ?? '' };
  if (!a.hasToken) return { summary: 'No access is stored for this account. Connect it again.', detail: '' };
  if (a.daysLeft !== null && a.daysLeft < 0) return { summary: 'The access has expired. Ask the owner to connect the account again.', detail: '' };
  return explainError(a.lastRefreshError) ?? explainError(a.lastSyncError);
}
