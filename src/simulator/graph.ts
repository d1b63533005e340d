import { GRANT_EXCHANGE, GRANT_REFRESH, SCOPE } from '../platform/identifiers.ts';
import type { SimContext, SimRequest } from './context.ts';
import { parseFields, type FieldRequest } from './fields.ts';
import { refusedField } from './media.ts';
import { graphError, json, paramError, unknownObject, type Reply } from './reply.ts';
import { comparePosts, LONG_LIVED_MS, MIN_REFRESH_AGE_MS, type PostRecord, type TokenRecord } from './state.ts';

/**
 * The graph host: token exchange and refresh (no version segment, R-MED-1), profile, media edge,
 * single media. Every failure is the platform's error envelope.
 */

export const SUPPORTED_VERSIONS = ['v25.0', 'v26.0'];
export const DEFAULT_LIMIT = 25;
/** The sample's expires_in is a little under 60 days (5 183 944 s): the answer lags the real expiry. */
const EXPIRES_IN_LAG_S = 56;
const PROFILE_FIELDS = new Set([
  'id',
  'user_id',
  'username',
  'name',
  'account_type',
  'profile_picture_url',
  'media_count',
  'followers_count',
  'follows_count',
]);

type Checked = { ok: true; token: TokenRecord } | { ok: false; reply: Reply };

function wordsDate(d: Date): string {
  return d.toUTCString();
}

/** Token rules of every call (R-TOK-10, R-TOK-14, R-OWN-4). */
export function checkToken(ctx: SimContext, token: string | undefined): Checked {
  const fail = (reply: Reply): Checked => ({ ok: false, reply });
  if (!token)
    return fail(
      graphError(400, 2500, 'An active access token must be used to query information about the current user.'),
    );
  const t = ctx.state.tokens.get(token);
  if (!t) return fail(graphError(400, 190, 'Invalid OAuth access token - Cannot parse access token'));
  const accountId = t.accountId;
  // An app the platform restricted: none of its tokens is answered (the other apps' are).
  if (ctx.state.apps.get(t.appId)?.restricted)
    return fail(graphError(400, 368, 'The app is restricted by the platform: it cannot make this call', { accountId }));
  if (t.invalidated === 'revoked') {
    return fail(
      graphError(
        400,
        190,
        'Error validating access token: The session is invalid because the user logged out or the app was removed.',
        { subcode: 467, accountId },
      ),
    );
  }
  if (t.invalidated === 'password') {
    return fail(
      graphError(
        400,
        190,
        'Error validating access token: The session has been invalidated because the user changed their password or the platform has changed the session for security reasons.',
        { subcode: 460, accountId },
      ),
    );
  }
  const now = ctx.state.clock.now();
  if (now.getTime() >= t.expiresAt.getTime()) {
    return fail(
      graphError(
        400,
        190,
        `Error validating access token: Session has expired on ${wordsDate(t.expiresAt)}. The current time is ${wordsDate(now)}.`,
        {
          subcode: 463,
          accountId,
        },
      ),
    );
  }
  // R-TOK-14: a development-mode app and an account without the tester role.
  if (!ctx.state.account(accountId).tester)
    return fail(graphError(400, 10, 'Insufficient developer role', { accountId }));
  return { ok: true, token: t };
}

function tokenAnswer(ctx: SimContext, token: string, accountId: string): Reply {
  return json(
    200,
    { access_token: token, token_type: 'bearer', expires_in: Math.floor(LONG_LIVED_MS / 1000) - EXPIRES_IN_LAG_S },
    accountId,
  );
}

/** R-TOK-1: short-lived -> long-lived, with the app secret. */
function exchange(ctx: SimContext, q: Record<string, string>): Reply {
  if (q.grant_type !== GRANT_EXCHANGE) return paramError(`Unsupported grant_type: expected ${GRANT_EXCHANGE}`);
  if (!q.client_secret) return paramError('Missing client_secret parameter.');
  // The secret must be one the platform knows; then the token must be that app's own (a token
  // belongs to the app that obtained it).
  const app = [...ctx.state.apps.values()].find((a) => a.secret === q.client_secret);
  if (!app) return graphError(400, 101, 'Error validating client secret.');
  const c = checkToken(ctx, q.access_token);
  if (!c.ok) return c.reply;
  if (c.token.appId !== app.appId) return graphError(400, 101, 'Error validating client secret.');
  if (c.token.kind !== 'short')
    return paramError('Only a short-lived access token can be exchanged', c.token.accountId);
  const token = ctx.state.issueToken(c.token.accountId, 'long', ctx.state.clock.now(), c.token.scopes, c.token.appId);
  return tokenAnswer(ctx, token, c.token.accountId);
}

/** R-TOK-2, R-TOK-5: a long-lived token at least 24 hours old, with the basic scope; a NEW token. */
function refresh(ctx: SimContext, q: Record<string, string>): Reply {
  if (q.grant_type !== GRANT_REFRESH) return paramError(`Unsupported grant_type: expected ${GRANT_REFRESH}`);
  const c = checkToken(ctx, q.access_token);
  if (!c.ok) return c.reply;
  const t = c.token;
  if (t.kind !== 'long') return paramError('Only a long-lived access token can be refreshed', t.accountId);
  if (!t.scopes.includes(SCOPE)) {
    return graphError(
      400,
      10,
      `(#10) Application does not have permission for this action: the ${SCOPE} permission was not granted`,
      { accountId: t.accountId },
    );
  }
  const now = ctx.state.clock.now();
  if (now.getTime() - t.issuedAt.getTime() < MIN_REFRESH_AGE_MS) {
    return graphError(
      400,
      10,
      '(#10) The access token is too young to be refreshed: it can be refreshed once it is at least 24 hours old',
      {
        accountId: t.accountId,
      },
    );
  }
  // The old token stays valid until its own expiry.
  const token = ctx.state.issueToken(t.accountId, 'long', now, t.scopes, t.appId);
  return tokenAnswer(ctx, token, t.accountId);
}

function fieldsOf(q: Record<string, string>, accountId: string): FieldRequest[] | Reply {
  const parsed = parseFields(q.fields);
  if ('error' in parsed) return paramError(parsed.error, accountId);
  return parsed;
}

function profile(ctx: SimContext, accountId: string, q: Record<string, string>): Reply {
  const fields = fieldsOf(q, accountId);
  if (!Array.isArray(fields)) return fields;
  const a = ctx.state.account(accountId);
  const out: Record<string, unknown> = { id: a.id };
  for (const f of fields) {
    if (!PROFILE_FIELDS.has(f.name) || f.sub)
      return paramError(`Tried accessing nonexisting field (${f.name}) on node type (IGUser)`, accountId);
    const h = Number(BigInt(a.id) % 997n);
    if (f.name === 'user_id') out.user_id = a.id;
    else if (f.name === 'username') out.username = a.username;
    else if (f.name === 'name') out.name = a.name;
    else if (f.name === 'account_type') out.account_type = a.accountType;
    else if (f.name === 'media_count') out.media_count = ctx.state.listPosts(a.id).length;
    else if (f.name === 'followers_count') out.followers_count = 1000 + h;
    else if (f.name === 'follows_count') out.follows_count = 100 + (h % 300);
    else if (f.name === 'profile_picture_url' && a.profilePicture) {
      out.profile_picture_url = ctx.signer.sign(
        { accountId: a.id, mediaId: a.id, slot: 'profile', ext: 'jpg' },
        ctx.state.clock.now().getTime() + ctx.linkLifetimeMs,
      );
    }
  }
  return json(200, out, accountId);
}

interface Cursor {
  t: number;
  s: number;
  p: number;
}
function encodeCursor(c: Cursor): string {
  return Buffer.from(`sim:${c.t}:${c.s}:${c.p}`).toString('base64url');
}
function decodeCursor(raw: string): Cursor | undefined {
  const m = /^sim:(\d+):(\d+):(\d+)$/.exec(Buffer.from(raw, 'base64url').toString('utf8'));
  return m ? { t: Number(m[1]), s: Number(m[2]), p: Number(m[3]) } : undefined;
}

/**
 * The media edge: newest first, `limit` items at most (default 25, capped at maxLimit), cursor
 * paging; with shortPages every second page holds fewer than limit while more follow (R-MED-5).
 * Links are signed as of the post's creation (or last visual change): listing never renews an
 * expired link, only the single-media call does (R-MED-8).
 */
function listMedia(
  ctx: SimContext,
  accountId: string,
  version: string,
  segment: string,
  q: Record<string, string>,
): Reply {
  const fields = fieldsOf(q, accountId);
  if (!Array.isArray(fields)) return fields;
  const refused = refusedField(fields, ctx.state.account(accountId));
  if (refused) return paramError(refused, accountId);
  let limit = DEFAULT_LIMIT;
  if (q.limit !== undefined) {
    if (!/^\d+$/.test(q.limit) || Number(q.limit) < 1)
      return paramError('Param limit must be a positive integer', accountId);
    limit = Math.min(Number(q.limit), ctx.maxLimit);
  }
  let cursor: Cursor | undefined;
  if (q.after !== undefined) {
    cursor = decodeCursor(q.after);
    if (!cursor) return paramError('Invalid cursor: after', accountId);
  }
  const all = ctx.state.listPosts(accountId);
  const endless = ctx.state.endlessPaging(accountId); // simulator.setEndlessPaging: the first page forever
  let start = 0;
  if (cursor && !endless) {
    const at = { timestamp: new Date(cursor.t), seq: cursor.s } as PostRecord;
    start = all.findIndex((p) => comparePosts(at, p) < 0);
    if (start === -1) start = all.length;
  }
  const page = cursor?.p ?? 0;
  const remaining = all.length - start;
  let size = limit;
  if (ctx.shortPages && page % 2 === 1 && remaining > limit) size = Math.max(1, Math.ceil(limit / 2));
  const items = all.slice(start, start + size);
  const data: unknown[] = items.map((p) =>
    ctx.renderer.render(p, fields, p.signedAt.getTime() + ctx.linkLifetimeMs, version),
  );
  if (page === 0 && !cursor) data.splice(Math.min(1, data.length), 0, ...ctx.state.listRawItems(accountId)); // a platform glitch, as given
  if (items.length === 0) return json(200, { data }, accountId);
  const first = items[0] as PostRecord;
  const last = items[items.length - 1] as PostRecord;
  const after =
    endless === 'same-cursor' && q.after !== undefined
      ? q.after // the page asked for names itself as the next one
      : encodeCursor({ t: last.timestamp.getTime(), s: last.seq, p: page + 1 });
  const paging: Record<string, unknown> = {
    cursors: { before: encodeCursor({ t: first.timestamp.getTime(), s: first.seq, p: page }), after },
  };
  if (endless || start + items.length < all.length) {
    const next = new URL(`${ctx.graphUrl()}/${version}/${segment}/media`);
    next.searchParams.set('access_token', q.access_token ?? '');
    if (q.fields !== undefined) next.searchParams.set('fields', q.fields);
    next.searchParams.set('limit', String(q.limit !== undefined ? limit : DEFAULT_LIMIT));
    next.searchParams.set('after', after);
    paging.next = next.toString();
  }
  return json(200, { data, paging }, accountId);
}

/** R-MED-8: one item with links signed now; the only way to renew a link. */
function singleMedia(
  ctx: SimContext,
  accountId: string,
  version: string,
  mediaId: string,
  q: Record<string, string>,
): Reply {
  const fields = fieldsOf(q, accountId);
  if (!Array.isArray(fields)) return fields;
  const refused = refusedField(fields, ctx.state.account(accountId));
  if (refused) return paramError(refused, accountId);
  const expiresAt = ctx.state.clock.now().getTime() + ctx.linkLifetimeMs;
  const post = ctx.state.postsById.get(mediaId);
  if (post && !post.deleted && post.accountId === accountId)
    return json(200, ctx.renderer.render(post, fields, expiresAt, version), accountId);
  const parent = ctx.state.slideParent.get(mediaId);
  if (parent && !parent.deleted && parent.accountId === accountId)
    return json(200, ctx.renderer.renderSlide(parent, mediaId, fields, expiresAt), accountId);
  return unknownObject(mediaId, accountId);
}

export function handleGraph(ctx: SimContext, r: SimRequest): Reply {
  const q = r.query;
  if (r.method !== 'GET')
    return graphError(400, 100, `Unsupported ${r.method} request.`, { type: 'GraphMethodException' });
  // Token endpoints: no version segment (R-MED-1).
  if (r.path === '/access_token') return exchange(ctx, q);
  if (r.path === '/refresh_access_token') return refresh(ctx, q);

  const segments = r.path.split('/').filter(Boolean);
  const version = segments.shift();
  if (!version || !/^v\d+\.\d+$/.test(version)) {
    // The real host falls back to its oldest version; the simulator insists on a pinned one (R-MED-1).
    return graphError(
      400,
      2500,
      `Unknown path components: ${r.path} (data calls need a version segment such as /${SUPPORTED_VERSIONS[0]})`,
    );
  }
  if (!SUPPORTED_VERSIONS.includes(version)) {
    const older = Number(version.slice(1)) < Number(SUPPORTED_VERSIONS[0]?.slice(1));
    return older
      ? graphError(
          400,
          2635,
          `(#2635) You are calling a deprecated version of the Graph API. Please update to the latest version: ${SUPPORTED_VERSIONS[0]}.`,
        )
      : graphError(400, 2500, `Unknown path components: /${version}`);
  }
  const c = checkToken(ctx, q.access_token);
  if (!c.ok) return c.reply;
  const own = c.token.accountId;
  const [node, edge, ...rest] = segments;
  if (!node || rest.length > 0) return graphError(400, 2500, `Unknown path components: ${r.path}`, { accountId: own });
  const target = node === 'me' ? own : node;
  if (edge === undefined) {
    if (target === own) return profile(ctx, own, q);
    return singleMedia(ctx, own, version, target, q);
  }
  if (edge === 'media') {
    // R-MED-12: /me/media and /<own id>/media are the same listing; another account's id is refused.
    if (target !== own) return unknownObject(target, own);
    return listMedia(ctx, own, version, node, q);
  }
  if (edge === 'children') {
    const p = ctx.state.postsById.get(target);
    if (!p || p.deleted || p.accountId !== own) return unknownObject(target, own);
    const fields = fieldsOf(q, own);
    if (!Array.isArray(fields)) return fields;
    const expiresAt = ctx.state.clock.now().getTime() + ctx.linkLifetimeMs;
    return json(200, { data: p.slides.map((s) => ctx.renderer.renderSlide(p, s.id, fields, expiresAt)) }, own);
  }
  return graphError(400, 2500, `Unknown path components: /${edge}`, { accountId: own });
}
