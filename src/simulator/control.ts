import { z } from 'zod';
import { isSecretKey } from '../util/redact.ts';
import type { SimContext } from './context.ts';
import { postSpecFor } from './demo-content.ts';
import { json, type Reply } from './reply.ts';
import type { RecordedRequest } from './types.ts';

/**
 * The control API, for other processes (`feedmirror simulator post add …` against a running demo,
 * a worker run by hand against `feedmirror simulator`, a multi-process test): state, clock,
 * request record, accounts and their posts, revoking or expiring tokens, a rate-limit window.
 * index.ts lets only loopback callers with the control secret in (R-SIM-1). Never a token in an
 * answer: the request record's secret values are replaced. Reference: README.md in this folder.
 */

const clockBody = z.union([
  z.strictObject({ advanceMs: z.number().int().nonnegative() }),
  z.strictObject({ set: z.iso.datetime({ offset: true }) }),
]);
const accountBody = z.strictObject({
  username: z
    .string()
    .regex(/^[A-Za-z0-9._]{1,30}$/)
    .optional(),
  name: z.string().min(1).optional(),
  accountType: z.enum(['BUSINESS', 'MEDIA_CREATOR', 'PERSONAL']).optional(),
  posts: z.number().int().min(0).max(10_000).optional(),
  tester: z.boolean().optional(),
  photos: z.boolean().optional(),
});

const postBody = z.strictObject({
  type: z.enum(['image', 'carousel', 'video', 'reel']).default('image'),
  caption: z.string().max(2200).nullable().optional(),
  /** A video's or reel's file size (bytes): the playable MP4 padded to it, streamed. */
  videoBytes: z
    .number()
    .int()
    .min(0)
    .max(2 ** 32 - 1)
    .optional(),
});
const editBody = z.strictObject({ caption: z.string().max(2200).nullable() });
const rateLimitBody = z.strictObject({
  seconds: z
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 3600),
  /** The app whose calls are spent (default: the simulator's first app). */
  appId: z.string().min(1).max(64).optional(),
});
const restrictBody = z.strictObject({ restricted: z.boolean() });

const SECRET_QUERY_KEYS = new Set(['access_token', 'client_secret', 'code', 'state', 'sig']);

function redactRecord(r: RecordedRequest): Record<string, unknown> {
  const scrub = (o: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(o).map(([k, v]) => [k, SECRET_QUERY_KEYS.has(k) || isSecretKey(k) ? '[redacted]' : v]),
    );
  return { ...r, query: scrub(r.query), form: r.form ? scrub(r.form) : undefined, at: r.at.toISOString() };
}

/**
 * The request record as counts (a long run records many thousands of requests: the benchmark
 * diffs two of these instead of downloading the record): per host, and per graph edge (the last
 * path segment, `{id}` for a node read such as the single-media read).
 */
export function requestCounts(requests: readonly RecordedRequest[]): {
  total: number;
  byHost: Record<string, number>;
  graphByEdge: Record<string, number>;
} {
  const byHost: Record<string, number> = {};
  const graphByEdge: Record<string, number> = {};
  for (const r of requests) {
    byHost[r.host] = (byHost[r.host] ?? 0) + 1;
    if (r.host !== 'graph') continue;
    const last = r.path.split('/').filter(Boolean).pop() ?? '';
    const edge = /^[a-z_]+$/.test(last) && last !== 'graph' ? last : '{id}';
    graphByEdge[edge] = (graphByEdge[edge] ?? 0) + 1;
  }
  return { total: requests.length, byHost, graphByEdge };
}

function problem(what: string, error: z.ZodError): Reply {
  return json(400, {
    error: `${what}: ${error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')}`,
  });
}

export function handleControl(
  ctx: SimContext,
  method: string,
  path: string,
  body: string,
  extra: {
    requests: RecordedRequest[];
    faultCount: () => number;
    rateLimitFor: (seconds: number, appId?: string) => Date;
    rateLimitedUntil: () => number;
    addApp: () => { appId: string; appSecret: string };
    resetAppSecret: (appId: string) => { appId: string; appSecret: string };
    restrictApp: (appId: string, restricted: boolean) => void;
  },
): Reply {
  const state = ctx.state;
  if (method === 'GET' && path === '/__sim/state') {
    return json(200, {
      now: state.clock.now().toISOString(),
      appId: ctx.appId,
      apps: [...state.apps.values()].map((a) => ({ appId: a.appId, restricted: a.restricted })),
      graphUrl: ctx.graphUrl(),
      accounts: [...state.accounts.values()].map((a) => ({
        id: a.id,
        username: a.username,
        accountType: a.accountType,
        tester: a.tester,
        posts: state.listPosts(a.id).length,
      })),
      faults: extra.faultCount(),
      requests: extra.requests.length,
    });
  }
  if (method === 'GET' && path === '/__sim/accounts') {
    return json(200, {
      accounts: [...state.accounts.values()].map((a) => ({
        id: a.id,
        username: a.username,
        name: a.name,
        posts: state.listPosts(a.id).map((p) => ({
          id: p.id,
          type: p.kind,
          caption: p.caption,
          timestamp: p.timestamp.toISOString(),
          permalink: state.permalink(p),
        })),
      })),
    });
  }
  if (method === 'GET' && path === '/__sim/requests') return json(200, { requests: extra.requests.map(redactRecord) });
  if (method === 'GET' && path === '/__sim/request-counts') return json(200, requestCounts(extra.requests));
  let parsedJson: unknown;
  try {
    parsedJson = body.trim() === '' ? {} : JSON.parse(body);
  } catch {
    return json(400, { error: 'the body is not JSON' });
  }
  if (method === 'POST' && path === '/__sim/clock') {
    const parsed = clockBody.safeParse(parsedJson);
    if (!parsed.success) return problem('expected {advanceMs: integer >= 0} or {set: ISO date-time}', parsed.error);
    if ('advanceMs' in parsed.data) state.clock.advance(parsed.data.advanceMs);
    else state.clock.set(new Date(parsed.data.set));
    return json(200, { now: state.clock.now().toISOString() });
  }
  if (method === 'POST' && path === '/__sim/accounts') {
    const parsed = accountBody.safeParse(parsedJson);
    if (!parsed.success) return problem('invalid account', parsed.error);
    try {
      return json(200, state.createAccount(parsed.data));
    } catch (err) {
      return json(400, { error: (err as Error).message });
    }
  }
  const rate = /^\/__sim\/rate-limit$/.test(path);
  if (method === 'POST' && rate) {
    const parsed = rateLimitBody.safeParse(parsedJson);
    if (!parsed.success) return problem('expected {seconds: integer 0..604800}', parsed.error);
    if (parsed.data.appId !== undefined && !state.apps.has(parsed.data.appId))
      return json(404, { error: `the simulator has no app ${parsed.data.appId}` });
    const until = extra.rateLimitFor(parsed.data.seconds, parsed.data.appId);
    return json(200, { rateLimitedUntil: parsed.data.seconds === 0 ? null : until.toISOString() });
  }
  // Apps: register one (its secret is in the answer: the caller is the operator of the fake
  // platform), give one a new secret, restrict one.
  if (method === 'POST' && path === '/__sim/apps') return json(200, extra.addApp());
  const appPath = /^\/__sim\/apps\/([0-9A-Za-z_-]{1,64})\/(secret|restrict)$/.exec(path);
  if (appPath && method === 'POST') {
    const app = appPath[1] as string;
    if (!state.apps.has(app)) return json(404, { error: `the simulator has no app ${app}` });
    if (appPath[2] === 'secret') return json(200, extra.resetAppSecret(app));
    const parsed = restrictBody.safeParse(parsedJson);
    if (!parsed.success) return problem('expected {restricted: boolean}', parsed.error);
    extra.restrictApp(app, parsed.data.restricted);
    return json(200, { appId: app, restricted: parsed.data.restricted });
  }
  const acc = /^\/__sim\/accounts\/(\d{1,30})(\/.*)?$/.exec(path);
  if (acc) {
    const accountId = acc[1] as string;
    const rest = acc[2] ?? '';
    if (!state.accounts.has(accountId)) return json(404, { error: `the simulator has no account ${accountId}` });
    if (method === 'POST' && rest === '/posts') {
      const parsed = postBody.safeParse(parsedJson);
      if (!parsed.success) return problem('invalid post', parsed.error);
      const id = state.addPost(accountId, {
        ...postSpecFor(parsed.data.type, parsed.data.caption, state.postsById.size, state.account(accountId).photos),
        ...(parsed.data.videoBytes !== undefined ? { videoBytes: parsed.data.videoBytes } : {}),
      });
      return json(200, postAnswer(ctx, accountId, id));
    }
    const one = /^\/posts\/(\d{1,30})$/.exec(rest);
    if (one) {
      const postId = one[1] as string;
      const post = state.postsById.get(postId);
      if (!post || post.deleted || post.accountId !== accountId)
        return json(404, { error: `account ${accountId} has no post ${postId}` });
      if (method === 'PATCH') {
        const parsed = editBody.safeParse(parsedJson);
        if (!parsed.success) return problem('expected {caption: string | null}', parsed.error);
        state.updatePost(accountId, postId, { caption: parsed.data.caption });
        return json(200, postAnswer(ctx, accountId, postId));
      }
      if (method === 'DELETE') {
        state.deletePost(accountId, postId);
        return json(200, { accountId, id: postId, deleted: true });
      }
    }
    if (method === 'POST' && rest === '/revoke') {
      state.revokeTokens(accountId);
      return json(200, { accountId, revoked: true });
    }
    if (method === 'POST' && rest === '/expire-token') {
      return json(200, { accountId, expired: state.expireTokens(accountId) });
    }
  }
  return json(404, { error: `no control endpoint ${method} ${path}` });
}

function postAnswer(ctx: SimContext, accountId: string, id: string): Record<string, unknown> {
  const p = ctx.state.post(accountId, id);
  return {
    accountId,
    id,
    type: p.kind,
    caption: p.caption,
    timestamp: p.timestamp.toISOString(),
    permalink: ctx.state.permalink(p),
  };
}
