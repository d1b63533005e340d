import { describe, expect, it } from 'vitest';
import { TRANSITIONS, decide, type AccountState, type LifecycleEvent } from '../../src/accounts/lifecycle.ts';

/** The account lifecycle's table, transition by transition, against the R-TOK rules it enforces. */
const STATES: AccountState[] = ['none', 'active', 'reauth_required'];

describe('account lifecycle transition table', () => {
  it('connected: from any state (a reconnect revives reauth_required, R-TOK-10) to active, and schedules (R-TOK-8)', () => {
    for (const s of STATES) expect(decide(s, 'connected'), s).toMatchObject({ to: 'active', effects: ['schedule'] });
  });

  it('refresh_succeeded (R-TOK-6): only an active account, no state change, no side effect', () => {
    expect(decide('active', 'refresh_succeeded')).toMatchObject({ to: 'active', effects: [], event: null });
    expect(decide('reauth_required', 'refresh_succeeded')).toBeNull();
    expect(decide('none', 'refresh_succeeded')).toBeNull();
  });

  it('refresh_failed (R-TOK-7): the account stays active and scheduled, so the refresh is retried while the token lives', () => {
    expect(decide('active', 'refresh_failed')).toMatchObject({ to: 'active', effects: [] });
    expect(decide('reauth_required', 'refresh_failed')).toBeNull();
  });

  it('token_expired (R-TOK-5, R-TOK-10): active -> reauth_required; schedules stop, then the operator is alerted', () => {
    expect(decide('active', 'token_expired')).toMatchObject({
      to: 'reauth_required',
      effects: ['unschedule', 'alert_reauth'],
      event: 'expired',
    });
    // Already waiting for its owner: nothing happens twice (no second email, no second event).
    expect(decide('reauth_required', 'token_expired')).toBeNull();
    expect(decide('none', 'token_expired')).toBeNull();
  });

  it('owner_must_act (R-TOK-10, R-OWN-4): active -> reauth_required with the same effects as an expiry', () => {
    expect(decide('active', 'owner_must_act')).toMatchObject({
      to: 'reauth_required',
      effects: ['unschedule', 'alert_reauth'],
      event: 'reauth_required',
    });
    expect(decide('reauth_required', 'owner_must_act')).toBeNull();
  });

  it('removed: from active or reauth_required; its own jobs (R-TOK-8) stop first', () => {
    expect(decide('active', 'removed')).toMatchObject({ to: 'removed', effects: ['unschedule'], event: 'removed' });
    expect(decide('reauth_required', 'removed')).toMatchObject({ to: 'removed' });
    expect(decide('none', 'removed')).toBeNull();
  });

  it('every transition that leaves a schedulable state stops the schedules; only connected starts them', () => {
    for (const [event, t] of Object.entries(TRANSITIONS) as Array<
      [LifecycleEvent, (typeof TRANSITIONS)[LifecycleEvent]]
    >) {
      if (t.to === 'reauth_required' || t.to === 'removed') expect(t.effects[0], event).toBe('unschedule');
      expect(t.effects.includes('schedule'), event).toBe(event === 'connected');
      expect(t.rule, event).toMatch(/R-[A-Z]+-\d+/);
    }
  });
});
