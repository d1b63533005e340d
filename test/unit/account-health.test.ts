import { describe, expect, it } from 'vitest';
import {
  accountHealth,
  byConcern,
  countByVerdict,
  HEALTH_REASON_KINDS,
  healthLine,
  reasonParts,
  staleAfterMs,
  type HealthFacts,
  type HealthReasonKind,
} from '../../src/accounts/health.ts';
import { DAY, HOUR, MINUTE } from '../../src/util/clock.ts';

/**
 * R-HLT-1, R-HLT-2: one verdict per account from its facts, each reason a stable kind and a
 * sentence. One case per reason: the healthy account gets exactly that reason and its level.
 */
const now = new Date('2026-06-01T12:00:00Z');
// R-MED-13: v25.0 is available until 2028-07-29, years after `now`: no warning unless a case moves the clock.
const policy = { now, syncIntervalMs: HOUR, apiVersion: { version: 'v25.0', warnDays: 90 } };
const ago = (ms: number) => new Date(now.getTime() - ms);

function healthy(): HealthFacts {
  return {
    accountId: '17841400000000001',
    status: 'active',
    statusReason: null,
    statusReasonKind: null,
    createdAt: ago(30 * DAY),
    token: {
      present: true,
      expiresAt: new Date(now.getTime() + 50 * DAY),
      refreshFailures: 0,
      lastRefreshError: null,
      lastRefreshErrorKind: null,
    },
    sync: {
      lastAt: ago(10 * MINUTE),
      outcome: 'complete',
      error: null,
      errorKind: null,
      lastCompleteAt: ago(10 * MINUTE),
      skippedItems: 0,
    },
    copies: { failing: 0, gaveUp: 0, latest: null, waitingPosts: 0, oldestWaitingSince: null },
    missingObjects: { count: 0, first: null },
    publication: { publishedAt: ago(2 * DAY), postCount: 18, demo: false },
    webhooks: [],
    removalHold: null,
    ownerEmail: null,
    reconnectLink: null,
  };
}

type Patch = {
  [K in keyof HealthFacts]?: HealthFacts[K] extends object | null
    ? Partial<NonNullable<HealthFacts[K]>> | null
    : HealthFacts[K];
};
function facts(patch: Patch): HealthFacts {
  const base = healthy() as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch)) {
    const cur = base[k];
    base[k] =
      v &&
      typeof v === 'object' &&
      !Array.isArray(v) &&
      !(v instanceof Date) &&
      cur &&
      typeof cur === 'object' &&
      !Array.isArray(cur)
        ? { ...cur, ...v }
        : v;
  }
  return base as unknown as HealthFacts;
}

const only = (f: HealthFacts, p: Partial<typeof policy> = {}) => {
  const h = accountHealth(f, { ...policy, ...p });
  return { verdict: h.verdict, kinds: h.reasons.map((r) => r.kind), texts: h.reasons.map((r) => r.text).join(' | ') };
};

describe('accountHealth: one verdict and its reasons (R-HLT-1, R-HLT-2)', () => {
  it('a healthy account is ok with no reason', () => {
    expect(accountHealth(healthy(), policy)).toEqual({ verdict: 'ok', reasons: [] });
    expect(healthLine(accountHealth(healthy(), policy))).toBe('ok');
  });

  const cases: Array<{
    kind: HealthReasonKind;
    verdict: 'warn' | 'fail';
    patch: Patch;
    text: RegExp;
    extra?: HealthReasonKind[];
    /** The policy's own fields this case changes (its clock). */
    policy?: Partial<typeof policy>;
  }> = [
    {
      kind: 'reauth_required',
      verdict: 'fail',
      patch: { status: 'reauth_required', statusReason: 'Error validating access token: password changed' },
      text: /owner must connect the account again \(Error validating/,
    },
    {
      kind: 'token_missing',
      verdict: 'fail',
      patch: { token: { present: false, expiresAt: null } },
      text: /no token is stored/,
    },
    {
      kind: 'token_expired',
      verdict: 'fail',
      patch: { token: { expiresAt: ago(HOUR) } },
      text: /token expired on 2026-06-01 11:00 UTC/,
    },
    {
      kind: 'token_expiring',
      verdict: 'warn',
      patch: { token: { expiresAt: new Date(now.getTime() + 10 * DAY + HOUR) } },
      text: /expires in 10 days/,
    },
    {
      kind: 'token_expiring',
      verdict: 'fail',
      patch: { token: { expiresAt: new Date(now.getTime() + 2 * DAY + HOUR) } },
      text: /expires in 2 days/,
    },
    {
      kind: 'token_refresh_failing',
      verdict: 'warn',
      patch: {
        token: {
          refreshFailures: 2,
          lastRefreshError: 'Service temporarily unavailable',
          lastRefreshErrorKind: 'network',
        },
      },
      text: /last 2 token renewals failed \(network\)/,
    },
    {
      kind: 'never_synced',
      verdict: 'warn',
      patch: { createdAt: ago(MINUTE), sync: { lastAt: null, outcome: null, lastCompleteAt: null }, publication: null },
      text: /not synced yet/,
    },
    {
      kind: 'sync_stale',
      verdict: 'fail',
      patch: { sync: { lastAt: ago(3 * HOUR), lastCompleteAt: ago(3 * HOUR) } },
      text: /no complete sync for 3 h \(one is due every 1 h\)/,
    },
    {
      kind: 'sync_stale',
      verdict: 'fail',
      patch: {
        createdAt: ago(5 * HOUR),
        sync: { lastAt: null, outcome: null, lastCompleteAt: null },
        publication: null,
      },
      text: /never synced completely since it was connected 5 h ago/,
    },
    {
      kind: 'sync_failed',
      verdict: 'fail',
      patch: { sync: { outcome: 'failed', error: 'storage said no: EACCES', errorKind: 'storage' } },
      text: /last sync \(.*\) failed: storage: storage said no/,
    },
    {
      kind: 'sync_failed',
      verdict: 'warn',
      patch: { sync: { outcome: 'failed', error: 'ECONNRESET', errorKind: 'network' } },
      text: /failed: network: ECONNRESET/,
    },
    {
      kind: 'sync_rate_limited',
      verdict: 'warn',
      patch: { sync: { outcome: 'failed', error: 'Application request limit reached', errorKind: 'rate_limit' } },
      text: /met a rate limit/,
    },
    {
      kind: 'sync_incomplete',
      verdict: 'warn',
      patch: { sync: { outcome: 'incomplete', error: 'page 3: HTTP 500', errorKind: 'platform' } },
      text: /stopped early, nothing was removed: platform: page 3/,
    },
    { kind: 'items_skipped', verdict: 'warn', patch: { sync: { skippedItems: 3 } }, text: /skipped 3 items/ },
    {
      kind: 'copies_failing',
      verdict: 'warn',
      patch: {
        copies: {
          failing: 2,
          gaveUp: 0,
          latest: { mediaId: 'm1', slot: 'cover', errorKind: 'network', error: 'ETIMEDOUT' },
        },
      },
      text: /2 image copies failed and are being retried \(latest: m1 cover: network: ETIMEDOUT\)/,
    },
    {
      kind: 'copies_failing',
      verdict: 'fail',
      patch: {
        copies: {
          failing: 1,
          gaveUp: 1,
          latest: {
            mediaId: 'm1',
            slot: 'cover',
            errorKind: 'bad_item',
            error: 'host cdn.example is not in MEDIA_ALLOWED_HOSTS',
          },
        },
      },
      text: /1 image copy failing, 1 given up until the next sync .*MEDIA_ALLOWED_HOSTS/,
    },
    {
      kind: 'images_missing',
      verdict: 'fail',
      patch: {
        missingObjects: {
          count: 1,
          first: {
            mediaId: 'm7',
            slot: 'cover',
            key: 'media/acc/m7/cover-0123abcd-w320.webp',
            foundBy: 'verify',
            foundAt: ago(HOUR),
          },
        },
      },
      text: /1 image the published feed points at is missing from storage, so sites show a broken image \(first: post m7 cover, media\/acc\/m7\/cover-0123abcd-w320\.webp, found by verify .*\): the next sync copies it again/,
    },
    {
      kind: 'images_missing',
      verdict: 'fail',
      patch: { missingObjects: { count: 3, first: null } },
      text: /3 images the published feed points at are missing from storage, so sites show broken images: the next sync copies them again/,
    },
    {
      // A video over a cap stays a platform link: a warning naming the cap, never silence.
      kind: 'videos_over_cap',
      verdict: 'warn',
      patch: { videosOverCap: { file: 1, account: 0, fileLimit: 100 * 1024 * 1024, accountLimit: null } },
      text: /^1 video larger than VIDEO_MAX_BYTES \(100 MiB\) not mirrored: it plays from the platform's signed link, so visitors' browsers ask the platform; raise the cap/,
    },
    {
      kind: 'videos_over_cap',
      verdict: 'warn',
      patch: { videosOverCap: { file: 2, account: 3, fileLimit: 100 * 1024 * 1024, accountLimit: 2 * 1024 ** 3 } },
      text: /^2 videos larger than VIDEO_MAX_BYTES \(100 MiB\) and 3 videos past the account's VIDEO_MAX_BYTES_PER_ACCOUNT \(2 GiB\) not mirrored: they play from the platform's signed links/,
    },
    {
      kind: 'posts_withheld',
      verdict: 'warn',
      patch: { copies: { waitingPosts: 4, oldestWaitingSince: ago(MINUTE) } },
      text: /4 posts stored but not published.*oldest waiting 1 min/,
    },
    {
      kind: 'posts_withheld',
      verdict: 'fail',
      patch: { copies: { waitingPosts: 1, oldestWaitingSince: ago(HOUR) } },
      text: /1 post stored but not published: its images/,
    },
    { kind: 'feed_not_published', verdict: 'fail', patch: { publication: null }, text: /no feed is published/ },
    {
      kind: 'feed_not_published',
      verdict: 'fail',
      patch: { publication: { demo: true } },
      text: /still the demo feed/,
    },
    {
      kind: 'removal_held',
      verdict: 'warn',
      patch: { removalHold: { since: ago(HOUR), removing: 18, publishedPosts: 18 } },
      text: /would remove 18 of the feed's 18 posts: held since/,
    },
    {
      kind: 'webhooks_failing',
      verdict: 'warn',
      patch: {
        webhooks: [
          {
            endpointId: 'wh_abcdefgh',
            state: 'failed',
            lastHttpStatus: 500,
            lastError: 'HTTP 500',
            lastAttemptAt: ago(MINUTE),
          },
        ],
      },
      text: /1 webhook endpoint did not take .*wh_abcdefgh failed \(HTTP 500\)/,
    },
    // R-MED-13: the pinned version's end of availability, PLATFORM_VERSION_WARN_DAYS ahead; the
    // account's own facts are fresh as of the moved clock.
    ...(() => {
      const at = (iso: string) => new Date(iso);
      const fresh = (t: Date): Patch => ({
        createdAt: new Date(t.getTime() - 30 * DAY),
        token: { expiresAt: new Date(t.getTime() + 50 * DAY) },
        sync: { lastAt: new Date(t.getTime() - MINUTE), lastCompleteAt: new Date(t.getTime() - MINUTE) },
      });
      const near = at('2028-05-01T12:00:00Z');
      const past = at('2028-07-30T00:00:01Z');
      return [
        {
          kind: 'api_version_ending' as const,
          verdict: 'warn' as const,
          patch: fresh(near),
          policy: { now: near },
          text: /platform API version v25\.0 is available until 2028-07-29 \(89 days left\): compare before moving: `feedmirror platform compare --version v26\.0`/,
        },
        {
          kind: 'api_version_ending' as const,
          verdict: 'fail' as const,
          patch: fresh(past),
          policy: { now: past },
          text: /v25\.0 was available until 2028-07-29: data calls through it fail/,
        },
      ];
    })(),
    {
      kind: 'app_fault',
      verdict: 'fail',
      patch: {
        app: {
          name: 'acme',
          fault: { kind: 'app_secret_refused', message: 'code 101', at: new Date('2026-06-01T11:00:00Z') },
        },
      },
      text: /the platform refuses the secret of app acme since 2026-06-01 11:00 UTC: every account of the app stops syncing; .*`feedmirror apps set acme --secret-file FILE`/,
    },
    {
      kind: 'app_fault',
      verdict: 'fail',
      patch: {
        app: {
          name: 'acme',
          fault: { kind: 'app_restricted', message: 'code 368', at: new Date('2026-06-01T11:00:00Z') },
        },
      },
      text: /the platform restricted app acme since 2026-06-01 11:00 UTC: .*developer settings \(the other apps' accounts are not affected\)/,
    },
    {
      // The default app has no row: its fault is the account's own last sync error.
      kind: 'app_fault',
      verdict: 'fail',
      patch: {
        sync: { outcome: 'failed', error: 'the platform refuses the app secret', errorKind: 'app_secret_refused' },
      },
      text: /the platform refuses the secret of the default app since .*set APP_SECRET to the app's current secret/,
      extra: ['sync_failed'],
    },
  ];

  for (const c of cases)
    it(`${c.kind} → ${c.verdict} (${String(c.text).slice(1, 40)})`, () => {
      const got = only(facts(c.patch), c.policy);
      expect(got.kinds).toEqual([c.kind, ...(c.extra ?? [])]);
      expect(got.verdict).toBe(c.verdict);
      expect(got.texts).toMatch(c.text);
    });

  it('the version warning waits for the lead: 91 days before the end nothing, 90 days a warning (R-MED-13)', () => {
    const end = new Date('2028-07-30T00:00:00Z').getTime();
    const f = (t: Date) =>
      facts({
        createdAt: new Date(t.getTime() - 30 * DAY),
        token: { expiresAt: new Date(t.getTime() + 50 * DAY) },
        sync: { lastAt: t, lastCompleteAt: t },
      });
    const early = new Date(end - 90 * DAY);
    const late = new Date(end - 90 * DAY + 1);
    expect(only(f(early), { now: early }).kinds).toEqual([]);
    expect(only(f(late), { now: late }).kinds).toEqual(['api_version_ending']);
    // A longer lead warns earlier; an account that does not sync (its owner must log in) says nothing of it.
    expect(only(f(early), { now: early, apiVersion: { version: 'v25.0', warnDays: 120 } }).kinds).toEqual([
      'api_version_ending',
    ]);
    expect(only(facts({ ...f(late), status: 'reauth_required' }), { now: late }).kinds).not.toContain(
      'api_version_ending',
    );
  });

  it('covers every reason kind', () => {
    expect(new Set(cases.map((c) => c.kind))).toEqual(new Set(HEALTH_REASON_KINDS));
  });

  it('an account of an app without a fault is ok; a rate limit on the app is not a fault of the app', () => {
    expect(only(facts({ app: { name: 'acme', fault: null } })).kinds).toEqual([]);
    const limited = only(
      facts({
        app: { name: 'acme', fault: null },
        sync: { outcome: 'failed', error: 'app rate limit (code 4)', errorKind: 'rate_limit' },
      }),
    );
    expect(limited.kinds).toEqual(['sync_rate_limited']);
  });

  it('never ok while a copy fails, a post is withheld or the last sync failed (R-HLT-2)', () => {
    for (const patch of [
      { copies: { failing: 1, gaveUp: 0 } },
      { copies: { waitingPosts: 1, oldestWaitingSince: now } },
      { missingObjects: { count: 1 } },
      { sync: { outcome: 'failed' as const, error: 'x', errorKind: 'network' as const } },
      { sync: { outcome: 'incomplete' as const, error: 'x', errorKind: 'platform' as const } },
    ])
      expect(accountHealth(facts(patch), policy).verdict).not.toBe('ok');
  });

  it('an account that waits for its owner is not also "stale" or "never synced": nothing syncs it by design', () => {
    const got = only(
      facts({ status: 'reauth_required', sync: { lastAt: ago(10 * DAY), lastCompleteAt: ago(10 * DAY) } }),
    );
    expect(got.kinds).toEqual(['reauth_required']);
  });

  it('a token too young to renew is not a failing renewal', () => {
    expect(
      only(
        facts({
          token: { refreshFailures: 1, lastRefreshError: 'too young', lastRefreshErrorKind: 'token_too_young' },
        }),
      ).verdict,
    ).toBe('ok');
  });

  it('fail reasons come first; the verdict is the worst; the line names the first reasons', () => {
    const h = accountHealth(
      facts({
        webhooks: [
          {
            endpointId: 'wh_abcdefgh',
            state: 'retrying',
            lastHttpStatus: null,
            lastError: 'ECONNREFUSED',
            lastAttemptAt: null,
          },
        ],
        copies: { failing: 1, gaveUp: 1 },
      }),
      policy,
    );
    expect(h.verdict).toBe('fail');
    expect(h.reasons.map((r) => [r.kind, r.level])).toEqual([
      ['copies_failing', 'fail'],
      ['webhooks_failing', 'warn'],
    ]);
    expect(healthLine(h, 1)).toMatch(/^fail: 1 image copy failing.* \(\+1 more\)$/);
  });

  it('redacts what it quotes', () => {
    const h = accountHealth(
      facts({
        sync: {
          outcome: 'failed',
          error: 'GET https://graph.example/me/media?access_token=IGQVJsecretsecret failed',
          errorKind: 'internal',
        },
      }),
      policy,
    );
    expect(h.reasons[0]!.text).not.toContain('IGQVJsecretsecret');
  });

  it('stale after two intervals and ten minutes', () => {
    expect(staleAfterMs(HOUR)).toBe(2 * HOUR + 10 * MINUTE);
    expect(only(facts({ sync: { lastCompleteAt: ago(2 * HOUR + 9 * MINUTE) } })).verdict).toBe('ok');
    expect(only(facts({ sync: { lastCompleteAt: ago(2 * HOUR + 11 * MINUTE) } })).kinds).toEqual(['sync_stale']);
  });

  it('counts by verdict and sorts worst first', () => {
    const list = [
      { id: 'a', health: accountHealth(healthy(), policy) },
      { id: 'b', health: accountHealth(facts({ token: { present: false } }), policy) },
      { id: 'c', health: accountHealth(facts({ sync: { skippedItems: 1 } }), policy) },
    ];
    expect(countByVerdict(list)).toEqual({ ok: 1, warn: 1, fail: 1 });
    expect([...list].sort(byConcern).map((a) => a.id)).toEqual(['b', 'c', 'a']);
  });
});

describe('R-HLT-1 / R-OWN-12: an account waiting for its owner says what was done about its reconnect link', () => {
  const ID = '17841400000000001';
  const waiting = (patch: Patch = {}) =>
    accountHealth(
      facts({
        status: 'reauth_required',
        statusReason: 'the platform refused the token: password changed (code 190/460)',
        ownerEmail: 'jane.owner@example.com',
        ...patch,
      }),
      policy,
    ).reasons.find((r) => r.kind === 'reauth_required')!.text;
  const link = (over: Partial<NonNullable<HealthFacts['reconnectLink']>> = {}) => ({
    delivery: 'email' as const,
    createdAt: ago(DAY),
    expiresAt: new Date(now.getTime() + 13 * DAY),
    usedAt: null,
    revokedAt: null,
    ...over,
  });

  it('an emailed link that still works: the owner (masked) was emailed on …, valid until …; nothing to send', () => {
    const text = waiting({ reconnectLink: link() });
    expect(text).toBe(
      'the owner must connect the account again (the platform refused the token: password changed (code 190/460)); the owner (j***@example.com) was emailed a reconnect link on 2026-05-31 12:00 UTC, valid until 2026-06-14 12:00 UTC',
    );
    expect(text).not.toMatch(/invitation|send one|jane\.owner/);
  });

  it('a link made to copy that still works: made on …, for the operator to pass on, valid until …', () => {
    expect(waiting({ reconnectLink: link({ delivery: 'copy' }) })).toMatch(
      /; a reconnect link made on 2026-05-31 12:00 UTC for you to pass on is valid until 2026-06-14 12:00 UTC$/,
    );
  });

  it('no link out: how to send one, on the dashboard and with the CLI (emailed when an owner is recorded)', () => {
    expect(waiting()).toMatch(
      new RegExp(
        `; no link is out: send one \\(dashboard: the account's page; CLI: \`feedmirror accounts reconnect-link ${ID} --send\`\\)$`,
      ),
    );
    // Nobody to email: the CLI makes a link to copy.
    expect(waiting({ ownerEmail: null })).toMatch(/CLI: `feedmirror accounts reconnect-link \d+`\)$/);
  });

  it('an expired link says so and that none is out; a used or revoked one, that none is out', () => {
    expect(waiting({ reconnectLink: link({ createdAt: ago(15 * DAY), expiresAt: ago(DAY) }) })).toMatch(
      /; the reconnect link emailed to the owner \(j\*\*\*@example\.com\) on 2026-05-17 12:00 UTC expired on 2026-05-31 12:00 UTC; no link is out: send one \(/,
    );
    for (const spent of [{ usedAt: ago(HOUR) }, { revokedAt: ago(HOUR) }]) {
      const text = waiting({ reconnectLink: link(spent) });
      expect(text).toMatch(/; no link is out: send one \(/);
      expect(text).not.toMatch(/expired|was emailed/);
    }
  });

  it('backticks mark only the commands a reason names: quoted text loses its own', () => {
    const text = waiting({ statusReason: 'odd `markup` from the platform' });
    expect(text).toContain("(odd 'markup' from the platform)");
    expect(reasonParts(text).filter((p) => p.command)).toEqual([
      { text: `feedmirror accounts reconnect-link ${ID} --send`, command: true },
    ]);
    expect(reasonParts('a `b` c `d')).toEqual([
      { text: 'a ', command: false },
      { text: 'b', command: true },
      { text: ' c ', command: false },
      { text: 'd', command: false },
    ]);
  });
});
