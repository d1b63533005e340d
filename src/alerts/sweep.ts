import type pg from 'pg';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { redactText } from '../util/redact.ts';
import { getAccount, eachAccount, type AccountWithExpiry } from '../store/accounts.ts';
import { AccountLifecycle, NO_SCHEDULES } from '../accounts/lifecycle.ts';
import { forgetAlert, recordAlertOnce, type AlertKey } from '../store/alerts-sent.ts';
import { getTokenInfo } from '../store/tokens.ts';
import type { Mailer } from './mailer.ts';
import { connectUrlFor } from './messages.ts';
import { renderEmail, type Brand, type EmailTemplates, type RenderedEmail as Email } from './templates.ts';
import { notifyOwner, ownerCause, ownerNotified, type OwnerAlertSettings, type OwnerOutcome } from './owner.ts';
import { daysLeft, dueThreshold } from './thresholds.ts';
import type { EventSink } from '../webhooks/events.ts';
import type { ErrorKind } from '../util/error-kinds.ts';

export interface SweepDeps {
  db: pg.Pool;
  mailer: Pick<Mailer, 'send'>;
  clock: Clock;
  logger: Logger;
  /** Public address of `feedmirror serve`; the emails link to its connect page. */
  publicUrl: string;
  /**
   * Makes an expired account reauth_required (stops its schedules, alerts). Without it, a
   * lifecycle with no queues: the state changes and the email goes out; schedules are not touched.
   */
  lifecycle?: Pick<AccountLifecycle, 'apply'>;
  /**
   * Webhook events: token.expiring and account.reauth_required, with the alert emails (once each).
   * Required: every caller (the worker's daily job, `feedmirror check-expiry`, a reauth alert)
   * sends the same emails AND events, since each threshold alerts once and an event left out
   * then is lost for good.
   */
  events: EventSink;
  /** The email templates (EMAIL_TEMPLATES_DIR laid over the built-in ones); default: built-in. */
  emailTemplates?: EmailTemplates;
  /** BRAND_*: the look of every email; default: feedmirror's. */
  brand?: Brand;
  /** Owner alerts (OWNER_ALERTS, RECONNECT_LINK_TTL); absent: the operator only. */
  owners?: OwnerAlertSettings;
}

export interface SentAlert {
  accountId: string;
  kind: 'expiry' | 'reauth';
  thresholdDays: number;
  /** Who got an email of this alert in this call: the operator, the owner (R-OWN-11), or both. */
  to?: Array<'operator' | 'owner'>;
}

export interface SweepResult {
  checked: number;
  sent: SentAlert[];
  /** Accounts whose alert could not be sent this time; the next sweep retries them. */
  failed: Array<{ accountId: string; error: string }>;
}

/**
 * The expiry sweep (R-TOK-9, R-TOK-10), run daily. For every account holding a token:
 * - active, token past its expiry: the account becomes reauth_required (event 'expired');
 * - reauth_required: one 'reauth' email per token life (threshold 0);
 * - active with a due threshold (14, 7, 3, 1 days): one 'expiry' email per threshold and token life.
 * Safe to run from several processes at once: every email is claimed in alerts_sent first.
 * Logs expiry dates, never tokens (this module never even decrypts one).
 */
export async function runExpirySweep(deps: SweepDeps): Promise<SweepResult> {
  const now = deps.clock.now();
  const result: SweepResult = { checked: 0, sent: [], failed: [] };
  const lifecycle =
    deps.lifecycle ??
    new AccountLifecycle({ ...deps, schedules: NO_SCHEDULES, alertReauth: (id) => alertReauthRequired(deps, id) });
  // A page of accounts at a time (eachAccount), not every account in memory at once.
  for await (const account of eachAccount(deps.db, now, { withTokenOnly: true })) {
    if (!account.expiresAt) continue;
    result.checked++;
    try {
      const sent = await alertAccount(deps, lifecycle, account, now);
      if (sent) result.sent.push(sent);
    } catch (err) {
      // One account's failure (SMTP down, ...) must not keep the others from their alerts.
      const error = redactText((err as Error).message);
      result.failed.push({ accountId: account.id, error });
      deps.logger.warn(
        { accountId: account.id, expiresAt: account.expiresAt.toISOString(), error },
        'alert email failed; the next sweep retries',
      );
    }
  }
  deps.logger.info(
    { checked: result.checked, sent: result.sent.length, failed: result.failed.length },
    'expiry sweep done',
  );
  return result;
}

/**
 * Send the reauth email for one account now (if not already sent for its current token), e.g.
 * right after a refresh found the password changed (R-TOK-10), instead of waiting for the sweep.
 * The account must already be reauth_required.
 */
export async function alertReauthRequired(deps: SweepDeps, accountId: string): Promise<SentAlert | null> {
  const now = deps.clock.now();
  const account = await getAccount(deps.db, accountId);
  const token = await getTokenInfo(deps.db, accountId);
  if (!account || !token || account.status !== 'reauth_required') return null;
  return sendReauth(
    deps,
    {
      id: account.id,
      username: account.username,
      statusReason: account.statusReason,
      statusReasonKind: account.statusReasonKind,
    },
    token.expiresAt,
    now,
  );
}

async function alertAccount(
  deps: SweepDeps,
  lifecycle: Pick<AccountLifecycle, 'apply'>,
  account: AccountWithExpiry,
  now: Date,
): Promise<SentAlert | null> {
  const expiresAt = account.expiresAt!;
  let status = account.status;
  let reason = account.statusReason;
  if (status === 'active' && expiresAt.getTime() <= now.getTime()) {
    // An expired token cannot be revived (R-TOK-5): only the owner's login helps. The lifecycle
    // makes the transition (its 'expired' event, unscheduling, the email) once across sweeps.
    reason = `the token expired on ${expiresAt.toISOString().slice(0, 10)}`;
    const applied = await lifecycle.apply(account.id, 'token_expired', reason, 'token_expired');
    if (applied.changed && applied.effects.includes('alert_reauth')) return applied.alert ?? null;
    status = 'reauth_required';
  }
  if (status === 'reauth_required') {
    return sendReauth(
      deps,
      {
        id: account.id,
        username: account.username,
        statusReason: reason,
        statusReasonKind: status === account.status ? account.statusReasonKind : 'token_expired',
      },
      expiresAt,
      now,
    );
  }
  const threshold = dueThreshold(expiresAt, now);
  if (threshold === null) return null;
  const left = daysLeft(expiresAt, now);
  const why =
    account.refreshFailures > 0
      ? `the last ${account.refreshFailures} refresh attempt${account.refreshFailures === 1 ? '' : 's'} failed${account.lastRefreshError ? ` (last error: ${account.lastRefreshError})` : ''}.`
      : undefined;
  const key: AlertKey = { accountId: account.id, kind: 'expiry', thresholdDays: threshold, tokenExpiresAt: expiresAt };
  const who = { id: account.id, username: account.username };
  // The owner first (R-OWN-11), so the operator's copy can say they were told, and when.
  const owner = await notifyOwner(
    deps,
    key,
    who,
    (o) =>
      renderEmail(
        'owner-expiry',
        { ...o, username: account.username, expiresAt, daysLeft: left, brand: deps.brand },
        deps.emailTemplates,
      ),
    now,
  );
  const email = renderEmail(
    'operator-expiry',
    {
      username: account.username,
      accountId: account.id,
      expiresAt,
      daysLeft: left,
      reason: why,
      dashboardUrl: connectUrlFor(deps.publicUrl),
      ownerNotified: ownerNotified(owner),
      brand: deps.brand,
    },
    deps.emailTemplates,
  );
  const sent = await sendOnce(deps, key, email, now);
  if (sent) {
    deps.logger.info(
      {
        accountId: account.id,
        username: account.username,
        expiresAt: expiresAt.toISOString(),
        daysLeft: left,
        thresholdDays: threshold,
      },
      'token expiry alert sent',
    );
    await deps.events.emit({
      type: 'token.expiring',
      data: {
        accountId: account.id,
        username: account.username,
        thresholdDays: threshold,
        expiresAt: expiresAt.toISOString(),
      },
    });
  }
  return withOwner(sent, key, owner);
}

async function sendReauth(
  deps: SweepDeps,
  account: { id: string; username: string; statusReason: string | null; statusReasonKind?: ErrorKind | null },
  expiresAt: Date,
  now: Date,
): Promise<SentAlert | null> {
  const key: AlertKey = { accountId: account.id, kind: 'reauth', thresholdDays: 0, tokenExpiresAt: expiresAt };
  const who = { id: account.id, username: account.username };
  const reason = account.statusReason ?? 'the token is no longer valid';
  const owner = await notifyOwner(
    deps,
    key,
    who,
    (o) =>
      renderEmail(
        'owner-reauth',
        {
          ...o,
          username: account.username,
          cause: ownerCause(account.statusReasonKind ?? null),
          brand: deps.brand,
        },
        deps.emailTemplates,
      ),
    now,
  );
  const email = renderEmail(
    'operator-reauth',
    {
      username: account.username,
      accountId: account.id,
      cause: reason,
      dashboardUrl: connectUrlFor(deps.publicUrl),
      expiresAt,
      ownerNotified: ownerNotified(owner),
      brand: deps.brand,
    },
    deps.emailTemplates,
  );
  const sent = await sendOnce(deps, key, email, now);
  if (sent) {
    deps.logger.info(
      { accountId: account.id, username: account.username, expiresAt: expiresAt.toISOString() },
      'reauth alert sent',
    );
    // Once per token life, like the email: whichever path found the token dead (refresh, sync, expiry).
    await deps.events.emit({
      type: 'account.reauth_required',
      data: { accountId: account.id, username: account.username, reason: account.statusReason },
    });
  }
  return withOwner(sent, key, owner);
}

/**
 * Claim first, then send: of several processes sweeping at once only the one whose INSERT wins
 * sends. If sending fails the claim is deleted so the next sweep retries: a missed warning costs
 * more than a rare duplicate (an SMTP reply lost after the server accepted the message). The
 * remaining gap is a crash between claim and send, which loses that one email; the next
 * threshold (or the reauth email) still goes out.
 */
async function sendOnce(deps: SweepDeps, key: AlertKey, email: Email, now: Date): Promise<SentAlert | null> {
  if (!(await recordAlertOnce(deps.db, { ...key, at: now }))) return null;
  try {
    await deps.mailer.send(email);
  } catch (err) {
    await forgetAlert(deps.db, key);
    throw err;
  }
  return { accountId: key.accountId, kind: key.kind, thresholdDays: key.thresholdDays };
}

/** The operator's outcome with the owner's added: an alert whose owner copy went out now counts as sent. */
function withOwner(sent: SentAlert | null, key: AlertKey, owner: OwnerOutcome | null): SentAlert | null {
  const ownerNow = owner?.told === true && owner.now;
  if (!ownerNow) return sent;
  return {
    accountId: key.accountId,
    kind: key.kind,
    thresholdDays: key.thresholdDays,
    to: sent ? ['operator', 'owner'] : ['owner'],
  };
}
