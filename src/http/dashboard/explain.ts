import { redactText } from '../../util/redact.ts';
import type { ErrorKind } from '../../util/error-kinds.ts';
import type { AccountWithExpiry } from '../../store/accounts.ts';

/**
 * Recorded errors explained to an operator by their kind (stored with every recorded error,
 * src/util/error-kinds.ts), never by re-reading the message. Pure; the original (redacted) text is
 * kept as the detail.
 */
export interface Explained {
  /** One sentence: what happened and what to do. */
  summary: string;
  /** The stored text, redacted, for the curious and for support. */
  detail: string;
}

export const EXPLANATIONS: Readonly<Record<ErrorKind, string>> = {
  // R-TOK-10 / R-OWN-4: any 190 means the owner must log in again; the subcode says why.
  password_changed:
    'The owner changed their password, so the connection was cut. Ask them to connect the account again.',
  token_expired: 'The access expired before it could be renewed. Ask the owner to connect the account again.',
  app_removed: 'The owner removed this app from their account. Ask them to connect again if they want the feed back.',
  checkpoint:
    'The platform wants the owner to confirm their identity (a security checkpoint). Ask them to log in on the platform, then connect again.',
  token_invalid: "The platform no longer accepts this account's access. Ask the owner to connect the account again.",
  developer_role:
    'The app is in development mode and this account lacks the tester role. Add it as a tester in the app settings, or switch the app to live.',
  personal_account:
    'This is a personal account; only professional (business or creator) accounts are supported. The owner can switch the account type in the platform app.',
  missing_permission:
    'A required permission was not granted. Ask the owner to connect again and approve every permission.',
  app_secret_refused:
    "The platform refuses the secret of this account's app (reset on the platform?). Nothing the owner can do: give feedmirror the app's current secret with feedmirror apps set APP --secret-file FILE.",
  app_restricted:
    "The platform restricted this account's app, so its accounts cannot be read. Fix the app in the platform's developer settings; the other apps' accounts are not affected.",
  rate_limit:
    "The platform's rate limit was reached. feedmirror waits and retries on its own; nothing to do unless it lasts for hours.",
  token_too_young: 'The access is less than a day old and cannot be renewed yet. It will be renewed later on its own.',
  link_expired: 'An image link expired before it was copied. It is renewed and copied on the next sync.',
  network: 'The platform could not be reached. feedmirror retries on its own; check the network if it lasts.',
  platform:
    'The platform answered with an error or something unexpected. feedmirror retries on its own; the details say what it was.',
  listing_runaway:
    'The platform kept handing out further pages long past what this account holds, so the listing was stopped; nothing was removed from the feed. Scheduled syncs of this account wait longer each time it happens (up to a day); a manual sync runs at once.',
  storage: 'Copies or the feed could not be written to storage. Check the storage settings, space and permissions.',
  bad_item: 'An item from the platform could not be used and was skipped; the rest of the feed is published.',
  internal:
    'Something failed inside feedmirror (the database, most likely); the details say what. It is retried on the next run.',
};

export function explainError(kind: ErrorKind | null | undefined, text: string | null | undefined): Explained | null {
  if (!text && !kind) return null;
  const detail = redactText(text ?? '').slice(0, 500);
  // A kind stored by a newer release may be one this table does not know yet.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
  return { summary: EXPLANATIONS[kind ?? 'internal'] ?? EXPLANATIONS.internal, detail };
}

type ProblemFields = Pick<
  AccountWithExpiry,
  | 'status'
  | 'statusReason'
  | 'statusReasonKind'
  | 'lastSyncError'
  | 'lastSyncErrorKind'
  | 'lastRefreshError'
  | 'lastRefreshErrorKind'
  | 'hasToken'
  | 'daysLeft'
>;

/** The account's most pressing problem, if any, in operator words. */
export function lastProblem(a: ProblemFields): Explained | null {
  if (a.status === 'reauth_required') {
    return (
      explainError(a.statusReasonKind ?? 'token_invalid', a.statusReason) ?? {
        summary: 'The owner must connect the account again.',
        detail: '',
      }
    );
  }
  if (!a.hasToken) return { summary: 'No access is stored for this account. Connect it again.', detail: '' };
  if (a.daysLeft !== null && a.daysLeft < 0) return { summary: EXPLANATIONS.token_expired, detail: '' };
  return (
    (a.lastRefreshError ? explainError(a.lastRefreshErrorKind, a.lastRefreshError) : null) ??
    (a.lastSyncError ? explainError(a.lastSyncErrorKind, a.lastSyncError) : null)
  );
}
