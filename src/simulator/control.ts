import { z } from 'zod';
import { isSecretKey } from '../util/redact.ts';
import type { SimContext } from './context.ts';
import { json, type Reply } from './reply.ts';
import type { RecordedRequest } from './types.ts';

/**
 * Control endpoints for other processes (a worker run by hand against `feedmirror simulator`, a
 * multi-process test): state, clock, request record, new accounts. Never a token in an answer:
 * the request record's secret values are replaced.
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
});

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
  extra: { requests: RecordedRequest[]; faultCount: () => number },
): Reply {
  const state = ctx.state;
  if (method === 'GET' && path === '/__sim/state') {
    return json(200, {
      now: state.clock.now().toISOString(),
      appId: ctx.appId,
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
  return json(404, { error: `no control endpoint ${method} ${path}` });
}
