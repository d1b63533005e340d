import { isDeepStrictEqual } from 'node:util';
import {
  buildStatusDocument,
  publishAccountStatus,
  removeAccountStatus,
  type StatusDeps,
} from '../accounts/status-document.ts';
import { ID_PATTERN } from '../util/ids.ts';
import { statusKey } from '../storage/keys.ts';
import { existingAccountIds, getAccount } from '../store/accounts.ts';
import type { VerifyFinding } from '../store/verify-runs.ts';
import { redactText } from '../util/redact.ts';

/**
 * Verify's view of the public status documents (R-OWN-16): they follow PUBLISH_STATUS. On, every
 * account has `status/<id>.json` and it says what the account's state gives now; off, there is
 * none at all (one written while it was on is left behind by nothing else); and none outlives
 * its account. The repair writes a missing or stale one with publishAccountStatus, the function
 * every publish and state change writes it with, and deletes one that should not be there with
 * removeAccountStatus, the function the account's removal deletes it with.
 */
export type StatusProblemKind =
  /** PUBLISH_STATUS is on and the account has no status document: a site's admin page gets 404. */
  | 'status-missing'
  /** The status document is not JSON, or not what the account's state gives now. */
  | 'status-stale'
  /** A status document that should not be there: PUBLISH_STATUS is off, or its account is gone. */
  | 'status-stray';

export interface StatusProblem extends VerifyFinding {
  kind: StatusProblemKind;
  accountId: string;
  key: string;
}

export interface StatusRepair extends VerifyFinding {
  kind: 'republished' | 'deleted-status' | 'repair-failed';
}

/** status/<accountId>.json, with the id; null for any other key (not ours: never touched). */
const STATUS_KEY_RE = new RegExp(`^status/(${ID_PATTERN.source.slice(1, -1)})\\.json$`);

/**
 * One account's document with PUBLISH_STATUS on: there, and current. Current: what
 * buildStatusDocument gives now, `generatedAt` aside; `daysLeft` may be the count of the day it
 * was made (the next publish, within a sync interval, counts again: not a problem).
 */
export async function checkAccountStatus(
  deps: Pick<StatusDeps, 'db' | 'storage' | 'clock'>,
  accountId: string,
  problems: StatusProblem[],
): Promise<void> {
  const key = statusKey(accountId);
  const stored = await deps.storage.get(key);
  if (!stored) {
    problems.push({
      kind: 'status-missing',
      accountId,
      key,
      detail: 'PUBLISH_STATUS is on and the account has no status document: a site reading it gets 404',
    });
    return;
  }
  let doc: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(stored.body.toString('utf8'));
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
      doc = parsed as Record<string, unknown>;
  } catch {
    doc = undefined;
  }
  const now = await buildStatusDocument(deps, accountId);
  if (!now) return; // removed meanwhile: the stray check below names its document
  if (!doc) {
    problems.push({ kind: 'status-stale', accountId, key, detail: 'not a status document (not a JSON object)' });
    return;
  }
  const { generatedAt, ...content } = doc;
  const { generatedAt: _now, ...expected } = now;
  if (isDeepStrictEqual(content, expected)) return;
  if (typeof generatedAt === 'string' && !Number.isNaN(Date.parse(generatedAt))) {
    const made = new Date(generatedAt);
    const then = await buildStatusDocument({ db: deps.db, clock: { now: () => made } }, accountId);
    if (then && isDeepStrictEqual(content, { ...expected, daysLeft: then.daysLeft })) return;
  }
  const fields = Object.keys({ ...content, ...expected }).filter(
    (k) => !isDeepStrictEqual(content[k], (expected as Record<string, unknown>)[k]),
  );
  problems.push({
    kind: 'status-stale',
    accountId,
    key,
    detail: `the status document is not what the account's state gives now (differs in ${fields.join(', ')})`,
  });
}

/**
 * The documents under status/ that should not be there: every one with PUBLISH_STATUS off, one
 * whose account is gone with it on (looked up 500 at a time). `accountId`: that account's
 * document alone.
 */
export async function checkStrayStatus(
  deps: Pick<StatusDeps, 'db' | 'storage'>,
  opts: { publishing: boolean; accountId?: string },
  problems: StatusProblem[],
): Promise<void> {
  const stray = (accountId: string, why: string) =>
    problems.push({ kind: 'status-stray', accountId, key: statusKey(accountId), detail: why });
  const off = 'PUBLISH_STATUS is off: no status document is published, this one was left behind';
  if (opts.accountId !== undefined) {
    // The account exists (the caller checked): only the switch can make its document stray.
    if (!opts.publishing && (await deps.storage.head(statusKey(opts.accountId)))) stray(opts.accountId, off);
    return;
  }
  let page: string[] = [];
  const flush = async () => {
    const exist = opts.publishing ? await existingAccountIds(deps.db, page) : new Set<string>();
    for (const id of page)
      if (!opts.publishing) stray(id, off);
      else if (!exist.has(id)) stray(id, 'its account is gone (removed): the document must go with it');
    page = [];
  };
  for await (const key of deps.storage.list('status/')) {
    const id = STATUS_KEY_RE.exec(key)?.[1];
    if (id === undefined) continue; // not a key of ours: never touched
    page.push(id);
    if (page.length >= 500) await flush();
  }
  await flush();
}

/**
 * The one place verify deletes a status document: the account is read again first (one that
 * came back with the switch on keeps its document), then removeAccountStatus, the account
 * removal's own deletion.
 */
async function deleteStatusDocument(
  deps: Pick<StatusDeps, 'db' | 'storage' | 'logger' | 'clock'>,
  publishing: boolean,
  accountId: string,
): Promise<boolean> {
  return removeAccountStatus(
    deps,
    accountId,
    async () => !publishing || (await getAccount(deps.db, accountId)) === null,
    'verify --repair',
  );
}

/** Write again each missing or stale document, delete each stray one. */
export async function repairStatus(
  deps: StatusDeps,
  publishing: boolean,
  problems: readonly StatusProblem[],
): Promise<StatusRepair[]> {
  const done: StatusRepair[] = [];
  for (const p of problems) {
    try {
      if (p.kind === 'status-stray') {
        if (await deleteStatusDocument(deps, publishing, p.accountId))
          done.push({ kind: 'deleted-status', accountId: p.accountId, key: p.key, detail: 'status document deleted' });
      } else if (await publishAccountStatus(deps, p.accountId)) {
        done.push({ kind: 'republished', accountId: p.accountId, key: p.key, detail: 'status document written again' });
      }
    } catch (err) {
      done.push({
        kind: 'repair-failed',
        accountId: p.accountId,
        key: p.key,
        detail: `could not ${p.kind === 'status-stray' ? 'delete' : 'write'} the status document: ${redactText(err instanceof Error ? err.message : String(err))}`,
      });
    }
  }
  return done;
}
