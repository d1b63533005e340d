import type { Counter } from 'prom-client';
import type pg from 'pg';
import { getAccount, removeAccount, setAccountStatus, type AccountStatus } from '../store/accounts.ts';
import type { TokenEventKind } from '../store/events.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { redactText } from '../util/redact.ts';
import type { EventSink } from '../webhooks/events.ts';
import type { ErrorKind } from '../util/error-kinds.ts';
import type { StatusPublisher } from './status-document.ts';

/**
 * The account lifecycle: the one owner of every account state change and its side effects.
 * Refresh, sync, the expiry sweep, the CLI and the dashboard all call `apply`; nothing else
 * writes accounts.status or starts and stops an account's schedules.
 *
 * States: `none` (no row), `active` (scheduled), `reauth_required` (only the owner can help: no
 * schedules, an alert went out), and `removed` (the row is gone; its history stays).
 * The table below is the whole behaviour; test/unit/account-lifecycle.test.ts walks it
 * transition by transition.
 */
export type AccountState = 'none' | AccountStatus;
export type LifecycleEvent =
  'connected' | 'refresh_succeeded' | 'refresh_failed' | 'token_expired' | 'owner_must_act' | 'removed';
export type Effect = 'schedule' | 'unschedule' | 'alert_reauth';

export interface Transition {
  from: readonly AccountState[];
  to: AccountState | 'removed';
  /** Run in this order, once, by the process whose guarded write made the transition. */
  effects: readonly Effect[];
  /** What token_events records (null: the token write records its own, or nothing to record). */
  event: TokenEventKind | null;
  /** The rule the transition enforces. */
  rule: string;
}

export const TRANSITIONS: Readonly<Record<LifecycleEvent, Transition>> = {
  // A login (OAuth callback or `accounts add`) stored a new token (saveToken records 'exchanged'
  // or 'imported'); a reconnect revives an account that needed its owner (R-TOK-10).
  connected: {
    from: ['none', 'active', 'reauth_required'],
    to: 'active',
    effects: ['schedule'],
    event: null,
    rule: 'R-TOK-4, R-TOK-8',
  },
  // The refresh replaced the token and its expiry (replaceTokenIfCurrent records 'refreshed').
  refresh_succeeded: { from: ['active'], to: 'active', effects: [], event: null, rule: 'R-TOK-6' },
  // The stored token is kept; the attempt is recorded and retried while the token lives.
  refresh_failed: { from: ['active'], to: 'active', effects: [], event: null, rule: 'R-TOK-7' },
  // No call revives an expired token: stop hammering, tell the operator.
  token_expired: {
    from: ['active'],
    to: 'reauth_required',
    effects: ['unschedule', 'alert_reauth'],
    event: 'expired',
    rule: 'R-TOK-5, R-TOK-10',
  },
  // Code 190 (any subcode), a missing permission, a personal account, no tester role.
  owner_must_act: {
    from: ['active'],
    to: 'reauth_required',
    effects: ['unschedule', 'alert_reauth'],
    event: 'reauth_required',
    rule: 'R-TOK-10, R-OWN-4',
  },
  // Schedules first: a scheduler firing between the two steps finds no account and skips.
  removed: {
    from: ['active', 'reauth_required'],
    to: 'removed',
    effects: ['unschedule'],
    event: 'removed',
    rule: 'R-TOK-8',
  },
};

/** The transition an event makes from a state, or null when the event does not apply there. */
export function decide(state: AccountState, event: LifecycleEvent): Transition | null {
  const t = TRANSITIONS[event];
  return t.from.includes(state) ? t : null;
}

/** A reauth email that went out (src/alerts/sweep.ts SentAlert). */
export interface ReauthAlert {
  accountId: string;
  kind: 'expiry' | 'reauth';
  thresholdDays: number;
}

/** Starting and stopping an account's job schedules (jobs/catalogue.ts accountSchedules). */
export interface AccountSchedules {
  schedule(accountId: string): Promise<void>;
  unschedule(accountId: string): Promise<void>;
}

export interface LifecycleDeps {
  db: pg.Pool;
  clock: Clock;
  logger: Logger;
  schedules: AccountSchedules;
  /** Send the reauth email now (deduplicated per token life; null: already sent); the sweep retries if this fails. */
  alertReauth(accountId: string): Promise<ReauthAlert | null>;
  /** feedmirror_account_transitions_total{transition}. */
  transitions?: Pick<Counter<'transition'>, 'inc'>;
  /** Webhook events (account.removed); the reauth event goes out with its alert (src/alerts/sweep.ts). */
  events?: EventSink;
  /**
   * Told after a transition this process made (removed, needs its owner, connected again): the
   * widgets that merge the account republish (R-WID-5; a removed account leaves them). Must not throw.
   */
  accountChanged?: (accountId: string) => Promise<void>;
  /** The public status document (PUBLISH_STATUS): rewritten on every state change, deleted on removal (R-OWN-16). */
  status?: Pick<StatusPublisher, 'publish' | 'remove'>;
}

export interface ApplyOptions {
  /**
   * The account's state before the caller's own write, when the caller wrote first: connecting
   * commits the row and its token before the lifecycle schedules it, so the row it would read is
   * already there ("none" is the truth for a new account, and what the log says).
   */
  from?: AccountState;
  /** More fields for the transition's one log line (a connect's username, expiry and channel). */
  log?: Record<string, unknown>;
}

export interface Applied {
  /** Whether this call made the transition (false: the event does not apply, or another process won). */
  changed: boolean;
  from: AccountState;
  to: AccountState | 'removed';
  /** The effects that ran (an effect that failed is logged and left to the repairs). */
  effects: Effect[];
  /** What the alert effect sent (null: it had already gone out for this token). */
  alert?: ReauthAlert | null;
}

/**
 * For a process that has no queues and sends no email (one-off tools, tests of one service):
 * the same table and writes, no schedules, no alert (the daily sweep sends it).
 */
export const NO_SCHEDULES: AccountSchedules = { schedule: async () => undefined, unschedule: async () => undefined };

export function statusOnlyLifecycle(deps: Pick<LifecycleDeps, 'db' | 'clock' | 'logger'>): AccountLifecycle {
  return new AccountLifecycle({ ...deps, schedules: NO_SCHEDULES, alertReauth: async () => null });
}

export class AccountLifecycle {
  constructor(private readonly deps: LifecycleDeps) {}

  /**
   * Make `event` happen to an account: the guarded write first, so of several processes making
   * the same transition exactly one runs its effects; then the effects in the table's order.
   * An effect that fails is logged and does not undo the write: the reconciler (schedules) and
   * the daily sweep (alerts) repair what it left undone.
   */
  async apply(
    accountId: string,
    event: LifecycleEvent,
    reason: string | null = null,
    reasonKind: ErrorKind | null = null,
    opts: ApplyOptions = {},
  ): Promise<Applied> {
    const { db, clock } = this.deps;
    const from: AccountState = opts.from ?? (await getAccount(db, accountId))?.status ?? 'none';
    const t = decide(from, event);
    if (!t) return { changed: false, from, to: from, effects: [] };
    const at = clock.now();
    const detail = reason == null ? null : redactText(reason);

    let changed: boolean;
    if (t.to === 'removed') {
      // Schedules before the row (see the table); removeAccount records the 'removed' event.
      const unscheduled = (await this.run('unschedule', accountId)) !== null;
      changed = await removeAccount(db, accountId, at);
      if (changed) {
        this.count(event, accountId, from, t, detail, opts.log);
        // Once: only the process whose delete won gets here.
        await this.deps.events?.emit({ type: 'account.removed', data: { accountId } });
        await this.tell(accountId);
        await this.deps.status?.remove(accountId);
      }
      return { changed, from, to: changed ? 'removed' : from, effects: unscheduled ? ['unschedule'] : [] };
    }
    if (t.to === from && from === 'active' && event !== 'connected') {
      changed = true; // refresh outcomes: no status change, only the count and the log
    } else {
      changed = await setAccountStatus(db, accountId, t.to as AccountStatus, t.to === 'active' ? null : detail, {
        at,
        // Guarded: only an account still in the state we read changes (exactly one winner).
        ...(from !== 'none' ? { from } : {}),
        event: t.event as 'reauth_required' | 'expired' | null,
        reasonKind,
      });
    }
    if (!changed) return { changed: false, from, to: from, effects: [] };
    this.count(event, accountId, from, t, detail, opts.log);
    const done: Effect[] = [];
    let alert: ReauthAlert | null | undefined;
    for (const effect of t.effects) {
      const ran = await this.run(effect, accountId);
      if (!ran) continue;
      done.push(effect);
      if (effect === 'alert_reauth') alert = ran.alert;
    }
    if (t.to !== from) await this.tell(accountId);
    // R-OWN-16: reauth, reconnect and refresh change what the status document says (never throws).
    if (event !== 'refresh_failed') await this.deps.status?.publish(accountId);
    return { changed, from, to: t.to, effects: done, ...(alert !== undefined ? { alert } : {}) };
  }

  /** R-WID-5: the account's widgets follow its change; a failure is logged, never thrown. */
  private async tell(accountId: string): Promise<void> {
    try {
      await this.deps.accountChanged?.(accountId);
    } catch (err) {
      this.deps.logger.warn({ err, accountId }, 'the widgets of this account could not be told of its change');
    }
  }

  private count(
    event: LifecycleEvent,
    accountId: string,
    from: AccountState,
    t: Transition,
    detail: string | null,
    fields: Record<string, unknown> = {},
  ): void {
    this.deps.transitions?.inc({ transition: event });
    const level = t.to === 'reauth_required' ? 'warn' : 'info';
    this.deps.logger[level](
      { accountId, from, to: t.to, event, ...fields, ...(detail ? { reason: detail } : {}) },
      `account ${event.replace(/_/g, ' ')}`,
    );
  }

  /** Whether the effect ran; a failure is logged, never thrown (the write already happened). */
  private async run(effect: Effect, accountId: string): Promise<{ alert?: ReauthAlert | null } | null> {
    try {
      if (effect === 'schedule') await this.deps.schedules.schedule(accountId);
      else if (effect === 'unschedule') await this.deps.schedules.unschedule(accountId);
      else return { alert: await this.deps.alertReauth(accountId) };
      return {};
    } catch (err) {
      this.deps.logger.warn(
        { accountId, effect, err: redactText((err as Error).message) },
        'account lifecycle: side effect failed; the reconciler or the daily sweep repairs it',
      );
      return null;
    }
  }
}
