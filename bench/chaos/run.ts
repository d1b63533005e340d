import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPool, type Db } from '../../src/store/db.ts';
import { upsertAccount } from '../../src/store/accounts.ts';
import { saveToken } from '../../src/store/tokens.ts';
import { TokenCipher } from '../../src/store/crypto.ts';
import { DAY, HOUR, MINUTE, type Clock } from '../../src/util/clock.ts';
import type { PostSpec } from '../../src/simulator/index.ts';
import { createQueues, type Queues } from '../../jobs/queues.ts';
import { requestSync } from '../../jobs/sync-requests.ts';
import { Checker, type AccountTruth } from './checker.ts';
import { History } from './history.ts';
import { startFault, type Ender, type InjectorContext, type SoakAccount } from './injectors.ts';
import { buildReport, type ChaosReport } from './report.ts';
import { FAULT_KINDS, makePlan, prng, type FaultKind, type Plan, type PlannedFault } from './schedule.ts';
import { openWorld, redisCommand, type World } from './world.ts';

/**
 * The chaos soak: the plan (schedule.ts) played against the world (world.ts), the checker
 * (checker.ts) reading the outside world after every sync round, the history written as it goes.
 *
 * Time: simulated time moves in steps of STEP; every SYNC_EVERY the soak asks a sync of every
 * connected account through the same path as `feedmirror sync` (R-NET-7's requestSync). The
 * workers' own schedulers run on BullMQ's real-time clock, which a compressed run cannot move,
 * so the sync cadence is driven here in simulated time; the workers still run their reconciler,
 * their own schedulers and everything a sync sets off.
 */

export interface ChaosOptions {
  seed: number;
  days: number;
  accounts: number;
  postsMean?: number;
  faultsPerDay?: number;
  historyFile: string;
  /** The PostgreSQL server's admin URL (default DATABASE_URL); the run makes a database of its own there. */
  databaseUrl?: string;
  /** Wall-clock cap on the wait for the queues to settle after a sync round, ms. */
  settleCapMs?: number;
  log?: (line: string) => void;
}

const START = Date.UTC(2026, 4, 1, 0);
const STEP = 10 * MINUTE;
const SYNC_EVERY = 30 * MINUTE;
const CALM = 2 * HOUR;
/** Recovery bounds (the issue's targets): own ground 15 min, platform and operators 1 hour. */
const BOUND = { ground: 15 * MINUTE, platform: HOUR, operator: HOUR } as const;

interface Active {
  fault: PlannedFault;
  end: Ender;
}

interface PendingRecovery {
  kind: FaultKind;
  fault: PlannedFault;
  endedAt: number;
  /** Other faults were active between its end and the recovery: its time is reported, not judged. */
  overlapped: boolean;
}

function postSpecs(r: () => number, n: number): PostSpec[] {
  const kinds: PostSpec['kind'][] = ['image', 'image', 'image', 'carousel', 'video', 'reel'];
  return Array.from({ length: n }, () => {
    const kind = kinds[Math.floor(r() * kinds.length)] as PostSpec['kind'];
    return kind === 'carousel'
      ? { kind, slides: (['image', 'image', 'video'] as const).slice(0, 2 + Math.floor(r() * 2)) }
      : { kind };
  });
}

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const wallStart = Date.now();
  const log = o.log ?? (() => undefined);
  const plan: Plan = makePlan({
    seed: o.seed,
    days: o.days,
    accounts: o.accounts,
    postsMean: o.postsMean ?? 12,
    faultsPerDay: o.faultsPerDay ?? 24,
    calmMs: CALM,
  });
  const history = new History(o.historyFile);
  history.write({ type: 'plan', plan });
  const rnd = prng(o.seed ^ 0x5eed);

  const world = await openWorld({
    start: START,
    log,
    env: { SYNC_INTERVAL_MINUTES: '60' },
  });
  const active: Active[] = [];
  const pending: PendingRecovery[] = [];
  const recoveries: Array<{ kind: FaultKind; ms: number | null }> = [];
  const faultCounts: Partial<Record<FaultKind, number>> = {};
  const checker = new Checker(() => active.map((x) => `${x.fault.kind}#${x.fault.id}`));
  const exempt = new Set<string>();
  const accounts: SoakAccount[] = [];
  const simClock: Clock = { now: () => new Date(world.now()) };
  let db: Db | undefined;
  let queues: Queues | undefined;
  const resources: Record<string, { first: number; last: number }> = {};
  let firstPostCount = 0;
  try {
    db = createPool(world.databaseUrl, { max: 4 });
    const migrate = await world.cli(['migrate']);
    if (migrate.code !== 0) throw new Error(`feedmirror migrate failed: ${migrate.stderr}`);
    const cipher = TokenCipher.fromEnv(world.env.TOKEN_ENCRYPTION_KEY);

    // The accounts of the start: on the platform, and imported as `accounts add` leaves them.
    for (let i = 0; i < plan.accounts; i++) {
      const acc = world.sim.createAccount({
        username: `chaos.shop.${i}`,
        posts: postSpecs(rnd, plan.startPosts[i] as number),
      });
      const token = world.sim.issueLongLivedToken(acc.id);
      await upsertAccount(db, { id: acc.id, username: acc.username }, simClock.now());
      await saveToken(
        db,
        cipher,
        { accountId: acc.id, accessToken: token, obtainedAt: simClock.now(), expiresAt: new Date(START + 60 * DAY) },
        'imported',
      );
      accounts.push({ id: acc.id, username: acc.username });
      const truth = checker.account(acc.id, acc.username, START);
      truth.disturbedUntil = START;
      for (const p of world.sim.posts(acc.id)) checker.sourcePost(acc.id, p.id, START);
    }
    queues = createQueues({ url: world.env.REDIS_URL as string, prefix: world.redisPrefix });
    // Redis goes away on purpose here: the soak's own queue handles say nothing of it.
    for (const q of Object.values(queues)) q.on('error', () => undefined);
    await world.startWorker(0);
    await world.startWorker(1);
    await world.startServe();
    const webhook = await world.cli(['webhooks', 'add', world.webhookUrl, '--json'], { stdoutRevealsSecret: true });
    if (webhook.code !== 0) throw new Error(`webhooks add failed: ${webhook.stderr}`);
    const hookSecret = /"secret"\s*:\s*"([^"]+)"/.exec(webhook.stdout)?.[1];
    if (hookSecret) world.secrets.add(hookSecret);
    log(
      `chaos: ${plan.accounts} accounts, ${plan.faults.length} faults over ${plan.days} days, seed ${plan.seed}; started in ${Math.round((Date.now() - wallStart) / 1000)} s`,
    );

    let added = 0;
    /** Operator tasks that failed (a repair while Redis was down): tried again every step until done. */
    const retries: Array<() => Promise<boolean>> = [];
    const ctx: InjectorContext = {
      world,
      accounts,
      target: (f) =>
        f.account === undefined || accounts.length === 0 ? undefined : accounts[f.account % accounts.length],
      reconnect: async (a) => {
        const token = world.sim.issueShortLivedToken(a.id);
        const r = await world.cli(['accounts', 'add'], { stdin: token });
        history.write({ type: 'operator', at: iso(world.now()), action: 'reconnect', account: a.id, exit: r.code });
      },
      addAccount: async () => {
        const acc = world.sim.createAccount({
          username: `chaos.new.${added++}`,
          posts: postSpecs(rnd, 1 + Math.floor(rnd() * 8)),
        });
        const token = world.sim.issueShortLivedToken(acc.id);
        const r = await world.cli(['accounts', 'add'], { stdin: token });
        history.write({ type: 'operator', at: iso(world.now()), action: 'add', account: acc.id, exit: r.code });
        if (r.code !== 0) return;
        accounts.push({ id: acc.id, username: acc.username });
        const t = checker.account(acc.id, acc.username, world.now());
        t.disturbedUntil = world.now();
        for (const p of world.sim.posts(acc.id)) checker.sourcePost(acc.id, p.id, world.now());
      },
      removeAccount: async (a) => {
        const r = await world.cli(['accounts', 'remove', a.id]);
        history.write({ type: 'operator', at: iso(world.now()), action: 'remove', account: a.id, exit: r.code });
        if (r.code !== 0) return;
        const t = checker.accounts.get(a.id);
        if (t) {
          t.connected = false;
          t.removedAt = world.now();
        }
        accounts.splice(accounts.indexOf(a), 1);
      },
      broken: (a, since) => {
        const t = checker.accounts.get(a.id);
        if (t) t.brokenSince = since;
      },
      retry: (task) => void retries.push(task),
      exemptImages: (urls, on) => urls.forEach((u) => (on ? exempt.add(u) : exempt.delete(u))),
      restartAll: async () => {
        await Promise.all([...world.workers, world.serve].map(async (p) => p?.stop()));
        await world.startWorker(0);
        await world.startWorker(1);
        await world.startServe();
      },
      log,
    };

    const endMs = START + plan.days * DAY;
    let nextFault = 0;
    let nextOwner = 0;
    let lastSync = -Infinity;
    const seenMail = new Set<string>();
    const mails = new Map<string, number[]>();
    let checkedWebhooks = 0;
    const checkedOutputs = new Map<number, number>();
    const settleCap = o.settleCapMs ?? 5_000;
    const lastEnd = new Map<string, number>();
    /** Per account: the last end of a fault other than a revocation (for the alert's deadline). */
    const lastMask = new Map<string, number>();

    for (let now = START; now <= endMs; now += STEP) {
      world.setTime(now);
      // Faults that end now, then those that start.
      for (const x of [...active])
        if (x.fault.endMs + START <= now) {
          active.splice(active.indexOf(x), 1);
          await x.end().catch((err: unknown) => log(`end ${x.fault.kind}: ${String(err)}`));
          history.write({ type: 'fault-end', at: iso(now), id: x.fault.id, kind: x.fault.kind });
          recordEnd(checker, ctx, x.fault, now, lastEnd);
          if (x.fault.kind !== 'token-revoked' && x.fault.kind !== 'password-changed')
            recordEnd(checker, ctx, x.fault, now, lastMask);
          pending.push({ kind: x.fault.kind, fault: x.fault, endedAt: now, overlapped: false });
        }
      while (nextFault < plan.faults.length && (plan.faults[nextFault] as PlannedFault).startMs + START <= now) {
        const f = plan.faults[nextFault++] as PlannedFault;
        faultCounts[f.kind] = (faultCounts[f.kind] ?? 0) + 1;
        const target = ctx.target(f);
        history.write({ type: 'fault-start', at: iso(now), id: f.id, kind: f.kind, account: target?.id ?? null });
        const end = await startFault(f, ctx).catch((err: unknown) => {
          log(`start ${f.kind}: ${String(err)}`);
          return async () => undefined;
        });
        if (f.endMs > f.startMs) active.push({ fault: f, end });
        else {
          recordEnd(checker, ctx, f, now, lastEnd);
          pending.push({ kind: f.kind, fault: f, endedAt: now, overlapped: false });
        }
      }
      // A recovery overlapped by another fault on the same accounts is reported, not judged.
      for (const p of pending)
        if (
          active.some((x) =>
            [...checker.accounts.keys()].some((id) => touches(x.fault, ctx, id) && touches(p.fault, ctx, id)),
          )
        )
          p.overlapped = true;
      await revive();
      for (const task of retries.splice(0)) if (!(await task().catch(() => false))) retries.push(task);
      updateDisturbance(checker, ctx, active, lastEnd);
      // The owners post, edit and delete.
      while (nextOwner < plan.owners.length && plan.owners[nextOwner]!.atMs + START <= now) {
        const ev = plan.owners[nextOwner++]!;
        const acc = accounts[ev.account % Math.max(1, accounts.length)];
        if (!acc) continue;
        const posts = world.sim.posts(acc.id);
        if (ev.action === 'post') {
          const id = world.sim.addPost(acc.id, postSpecs(prng(ev.salt), 1)[0] as PostSpec);
          checker.sourcePost(acc.id, id, now);
          history.write({ type: 'owner', at: iso(now), account: acc.id, action: 'post', post: id });
        } else if (posts.length > 1) {
          const p = posts[ev.salt % posts.length]!;
          if (ev.action === 'edit') world.sim.updatePost(acc.id, p.id, { caption: `edited ${ev.salt}` });
          else {
            world.sim.deletePost(acc.id, p.id);
            checker.sourceDelete(acc.id, p.id, now);
          }
          history.write({ type: 'owner', at: iso(now), account: acc.id, action: ev.action, post: p.id });
        }
      }
      // A sync round every SYNC_EVERY (every connected account, as its schedule would); the
      // checker looks at every step, so a recovery is timed to the step, not to the round.
      if (now - lastSync >= SYNC_EVERY) {
        lastSync = now;
        await syncRound();
        await settle(queues, settleCap);
      } else await settle(queues, Math.min(settleCap, 2_000));
      await checkWorld(now);
      const w = Math.round((Date.now() - wallStart) / 1000);
      log(`chaos: ${iso(now)} wall ${w}s, ${active.length} faults active, ${checker.violations.length} violations`);
    }
    // The end: every fault over, one more hour for recovery to show.
    for (const x of active.splice(0)) {
      await x.end().catch(() => undefined);
      recordEnd(checker, ctx, x.fault, world.now(), lastEnd);
      pending.push({ kind: x.fault.kind, fault: x.fault, endedAt: world.now(), overlapped: false });
    }
    await finalChecks();

    /** Until when faults other than the revocation itself hid it from feedmirror (now while one is active). */
    function maskedUntil(accountId: string, now: number): number {
      const other = (f: PlannedFault) =>
        f.kind !== 'token-revoked' && f.kind !== 'password-changed' && touches(f, ctx, accountId);
      if (active.some((x) => other(x.fault))) return now;
      return lastMask.get(accountId) ?? 0;
    }

    /** As a supervisor (systemd, Kubernetes) does: a process that is not running is started again. */
    async function revive(): Promise<void> {
      const killed = new Set(active.filter((x) => x.fault.kind === 'worker-killed').map((x) => x.fault.salt % 2));
      for (const i of [0, 1]) {
        const w = world.workers[i];
        if (killed.has(i) || (w && w.child.exitCode === null && w.child.signalCode === null)) continue;
        await world
          .startWorker(i)
          .catch((err: unknown) => log(`worker-${i} did not start: ${String(err).slice(0, 200)}`));
      }
      const sv = world.serve;
      if (!sv || sv.child.exitCode !== null || sv.child.signalCode !== null)
        await world.startServe().catch((err: unknown) => log(`serve did not start: ${String(err).slice(0, 200)}`));
    }

    async function syncRound(): Promise<void> {
      for (const a of accounts)
        await within(
          requestSync({ db: db!, queues: queues!, clock: simClock }, a.id, 'cli').catch(() => undefined),
          2_000,
        );
    }

    async function checkWorld(now: number): Promise<void> {
      const currentNow = new Set<string>();
      let postsNow = 0;
      for (const a of accounts) {
        const t = checker.accounts.get(a.id) as AccountTruth;
        const source = new Set(world.sim.posts(a.id).map((p) => p.id));
        postsNow += source.size;
        const feed = await readJson<{ posts: Array<Record<string, unknown>> }>(
          world,
          `feeds/${a.id}.json`,
          now,
          checker,
        );
        const ids = feed ? new Set(feed.posts.map((p) => String(p.id))) : null;
        checker.observeFeed(t, ids, source, now);
        const current = checker.current(t, ids, now, SYNC_EVERY + STEP);
        if (current) currentNow.add(a.id);
        if (feed) await checkImages(t, feed.posts, now);
        const status = await readJson<{ state?: string }>(world, `status/${a.id}.json`, now, checker);
        checker.observeHealth(
          t,
          status?.state ?? null,
          current,
          now,
          t.brokenSince === null ? 0 : maskedUntil(a.id, now),
        );
        if (t.brokenSince !== null) {
          const alertMails = mailsAbout(a.username, t.brokenSince);
          const hooks = world.webhooks.filter(
            (h) => h.accountId === a.id && h.event === 'account.reauth_required' && h.at >= t.brokenSince!,
          ).length;
          // The platform can only tell once nothing else stands between the calls and the
          // revocation (an empty listing answered by a fault, a rate limit, Redis down).
          const since = Math.max(t.brokenSince, maskedUntil(a.id, now));
          if (alertMails === 0) checker.observeAlertMissing(t, 'email', since, now);
          else checker.observeAlertCount(t, 'emails', alertMails, now);
          if (hooks === 0) checker.observeAlertMissing(t, 'account.reauth_required webhook', since, now);
          else checker.observeAlertCount(t, 'webhooks', hooks, now);
        }
      }
      // Recovery: the first round after a fault's end at which every account it touched is current.
      for (const p of [...pending]) {
        const touched = accounts.filter((a) => touches(p.fault, ctx, a.id) && !checker.accounts.get(a.id)?.brokenSince);
        if (touched.some((a) => !currentNow.has(a.id))) continue;
        pending.splice(pending.indexOf(p), 1);
        const ms = now - p.endedAt;
        recoveries.push({ kind: p.kind, ms });
        checker.observeRecovery(p.kind, ms, p.overlapped ? Infinity : BOUND[FAULT_KINDS[p.kind].layer], p.endedAt, now);
        history.write({ type: 'recovered', at: iso(now), kind: p.kind, id: p.fault.id, endedAt: iso(p.endedAt), ms });
      }
      scanMail(now);
      for (const h of world.webhooks.slice(checkedWebhooks))
        checker.observeText('a webhook', h.body, world.secrets, now);
      checkedWebhooks = world.webhooks.length;
      world.outputs().forEach((out, i) => {
        const from = checkedOutputs.get(i) ?? 0;
        if (out.length > from)
          checker.observeText(`a process's output`, out.slice(Math.max(0, from - 64)), world.secrets, now);
        checkedOutputs.set(i, out.length);
      });
      if (firstPostCount === 0) firstPostCount = postsNow;
      await sampleResources(now, postsNow / Math.max(1, firstPostCount));
    }

    async function checkImages(t: AccountTruth, posts: Array<Record<string, unknown>>, now: number): Promise<void> {
      const urls = new Set<string>();
      type Sized = { url: string };
      for (const p of posts) {
        if (typeof p.thumbnailUrl === 'string') urls.add(p.thumbnailUrl);
        for (const s of (p.thumbnailSizes as Sized[] | undefined) ?? []) urls.add(s.url);
        for (const m of (p.media as Array<{ url: string; mime: string; sizes?: Sized[] }> | undefined) ?? [])
          if (m.mime.startsWith('image/')) {
            urls.add(m.url);
            for (const s of m.sizes ?? []) urls.add(s.url);
          }
      }
      for (const url of urls) {
        if (exempt.has(url)) continue;
        // Every image of the last checked feed would be a full scan per round; a seeded sample
        // of three per account per round covers them all over a day.
        if (urls.size > 3 && rnd() > 3 / urls.size) continue;
        const res = await fetch(url, { method: 'HEAD' }).catch(() => null);
        checker.observeImage(t, url, res?.status ?? 0, res?.headers.get('content-type') ?? null, now);
      }
    }

    function scanMail(now: number): void {
      let names: string[];
      try {
        names = readdirSync(world.outboxDir).filter((n) => n.endsWith('.eml'));
      } catch {
        return;
      }
      for (const n of names) {
        if (seenMail.has(n)) continue;
        seenMail.add(n);
        const text = readFileSync(join(world.outboxDir, n), 'utf8');
        checker.observeText('an email', text, world.secrets, now);
        for (const a of checker.accounts.values())
          if (text.includes(a.username)) mails.set(a.username, [...(mails.get(a.username) ?? []), now]);
      }
    }

    function mailsAbout(username: string, since: number): number {
      return (mails.get(username) ?? []).filter((t) => t >= since).length;
    }

    async function sampleResources(now: number, growth: number): Promise<void> {
      const samples: Record<string, number> = {};
      for (const w of world.workers) {
        const pid = w?.child.pid;
        if (!pid || w.child.exitCode !== null) continue;
        try {
          const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
          if (kb) samples[`${w.name} RSS`] = Number(kb) * 1024;
        } catch {
          // The process just ended (a fault): no sample this round.
        }
      }
      const info = await redisCommand(world.redisPort, 'INFO', 'memory').catch(() => '');
      const used = /used_memory:(\d+)/.exec(info)?.[1];
      if (used) samples['Redis used_memory'] = Number(used);
      const size = await db!
        .query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')
        .then((r) => Number(r.rows[0]?.n ?? 0))
        .catch(() => 0);
      if (size) samples['PostgreSQL database size'] = size;
      for (const [name, v] of Object.entries(samples)) {
        const r = (resources[name] ??= { first: v, last: v });
        r.last = v;
        checker.observeResource(name, r.first, v, growth, now);
      }
    }

    async function finalChecks(): Promise<void> {
      // One more hour with every fault over: whatever was still recovering has had its chance.
      for (let i = 0; i < 2; i++) {
        const now = world.now() + SYNC_EVERY;
        world.setTime(now);
        updateDisturbance(checker, ctx, active, lastEnd);
        await syncRound();
        await settle(queues!, settleCap);
        await checkWorld(now);
      }
      for (const p of pending.splice(0)) {
        recoveries.push({ kind: p.kind, ms: null });
        checker.observeRecovery(p.kind, null, 0, p.endedAt, world.now());
      }
      // The published files, read whole once at the end (feeds and status documents) for secrets.
      for (const a of accounts)
        for (const key of [`feeds/${a.id}.json`, `status/${a.id}.json`]) {
          const res = await fetch(`${world.publicBase}${key}`).catch(() => null);
          if (res?.ok) checker.observeText(`published ${key}`, await res.text(), world.secrets, world.now());
        }
    }
  } finally {
    if (queues) await Promise.all(Object.values(queues).map((q) => q.close().catch(() => undefined)));
    await db?.end().catch(() => undefined);
    await world.close();
  }
  for (const v of checker.violations) history.write({ type: 'violation', ...v });
  const report = buildReport({
    plan,
    faults: faultCounts,
    checker,
    recoveries,
    resources,
    wallSeconds: (Date.now() - wallStart) / 1000,
    historyFile: o.historyFile,
  });
  history.write({ type: 'report', report });
  await history.close();
  return report;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Whether a fault touches an account: its own for a per-account fault, every account for the others. */
function touches(f: PlannedFault, ctx: InjectorContext, accountId: string): boolean {
  return FAULT_KINDS[f.kind].scope === 'system' || ctx.target(f)?.id === accountId;
}

/** Until when each account counts as disturbed: Infinity while a fault touching it is active. */
function updateDisturbance(
  checker: Checker,
  ctx: InjectorContext,
  active: Active[],
  lastEnd: Map<string, number>,
): void {
  for (const t of checker.accounts.values())
    t.disturbedUntil = active.some((x) => touches(x.fault, ctx, t.id))
      ? Infinity
      : Math.max(t.disturbedUntil === Infinity ? 0 : t.disturbedUntil, lastEnd.get(t.id) ?? 0);
}

/** A fault ended (or an instant one happened): the accounts it touched were disturbed until now. */
function recordEnd(
  checker: Checker,
  ctx: InjectorContext,
  f: PlannedFault,
  now: number,
  lastEnd: Map<string, number>,
): void {
  for (const id of checker.accounts.keys()) if (touches(f, ctx, id)) lastEnd.set(id, now);
}

/** A promise that gives up after `ms` (a call to a Redis that is down would wait forever). */
function within<T>(p: Promise<T>, ms: number): Promise<T | null> {
  return Promise.race([p, new Promise<null>((r) => setTimeout(() => r(null), ms).unref())]);
}

async function readJson<T>(world: World, key: string, _now: number, _checker: Checker): Promise<T | null> {
  const res = await fetch(`${world.publicBase}${key}`).catch(() => null);
  if (!res || res.status !== 200) return null;
  try {
    return (await res.json()) as T;
  } catch {
    return null;
  }
}

/** Wait until nothing is waiting or running on any queue (or the cap passes; Redis may be down). */
async function settle(queues: Queues, capMs: number): Promise<void> {
  const until = Date.now() + capMs;
  while (Date.now() < until) {
    const counts = await Promise.all(
      Object.values(queues).map((q) =>
        within(q.getJobCounts('waiting', 'active', 'prioritized', 'waiting-children'), 2_000).catch(() => null),
      ),
    );
    if (counts.some((c) => c === null)) return;
    const busy = counts.reduce((n, c) => n + Object.values(c!).reduce((a, b) => a + b, 0), 0);
    if (busy === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}
