import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { DAY, ManualClock } from '../util/clock.ts';
import { redactText } from '../util/redact.ts';
import { handleCdn } from './cdn.ts';
import type { SimContext, SimRequest } from './context.ts';
import { handleControl } from './control.ts';
import { faultAction, FaultList, rateLimitReply } from './faults.ts';
import { handleGraph } from './graph.ts';
import { LinkSigner } from './links.ts';
import { MediaRenderer } from './media.ts';
import { handleOAuth } from './oauth.ts';
import { html } from '../util/html.ts';
import { htmlPage, json, type Reply } from './reply.ts';
import { defaultSecretSink } from './secrets-ledger.ts';
import { SimState } from './state.ts';
import type { RecordedRequest, RequestHost, Simulator, SimulatorOptions } from './types.ts';
import { UsageMeter } from './usage.ts';

export type * from './types.ts';
export { MIX_SIZE } from './state.ts';

/**
 * A faithful fake of the platform over real HTTP: one listener for graph (/graph), login (/oauth)
 * and control (/__sim), a second one for the image host (the CDN). Time is its own ManualClock.
 */

const DEFAULT_START = Date.UTC(2026, 0, 1);
const DEFAULT_LINK_LIFETIME_MS = 5 * DAY;
const MAX_FORM_BYTES = 64 * 1024;

function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_FORM_BYTES) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Whether a peer address is this machine (IPv4 127/8, ::1, or IPv4-mapped 127/8). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  return address === '::1' || /^(::ffff:)?127\./.test(address);
}

/** `Authorization: Bearer <secret>`, compared in constant time. */
function controlAuthorized(header: string | undefined, secret: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!m) return false;
  const a = createHash('sha256')
    .update(m[1] as string)
    .digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

function hostPart(url: string): string {
  return new URL(url).host;
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const host = opts.host ?? '127.0.0.1';
  const clock = new ManualClock(opts.start ?? DEFAULT_START);
  const onSecret = opts.onSecret ?? defaultSecretSink();
  const appId = opts.appId ?? String(randomInt(100_000_000, 999_999_999)) + String(randomInt(100_000, 999_999));
  const appSecret = opts.appSecret ?? randomBytes(16).toString('hex');
  onSecret(appSecret);
  const controlSecret = opts.controlSecret ?? randomBytes(24).toString('base64url');
  onSecret(controlSecret);
  const linkKey = opts.linkKey ?? randomBytes(32);
  if (linkKey.length < 16) throw new Error('simulator: linkKey must be at least 16 bytes');
  const linkLifetimeMs = opts.linkLifetimeMs ?? DEFAULT_LINK_LIFETIME_MS;
  const maxLimit = opts.maxLimit ?? 100;
  if (!(linkLifetimeMs > 0)) throw new Error('simulator: linkLifetimeMs must be > 0');
  if (!Number.isInteger(maxLimit) || maxLimit < 1) throw new Error('simulator: maxLimit must be an integer >= 1');

  let baseUrl = '';
  let imageBaseUrl = '';
  const state = new SimState(clock, () => baseUrl, onSecret);
  state.primaryAppId = appId;
  state.apps.set(appId, { appId, secret: appSecret, restricted: false });
  const newAppId = () => String(randomInt(100_000_000, 999_999_999)) + String(randomInt(100_000, 999_999));
  const newSecret = () => randomBytes(16).toString('hex');
  const signer = new LinkSigner(linkKey, () => imageBaseUrl);
  const renderer = new MediaRenderer(state, signer);
  const faults = new FaultList();
  // Rate-limit windows: the simulated clock, or the wall clock when asked (runs against workers
  // that wait in real time, as BullMQ's delays do).
  // One meter per app: each app's usage headers and app-wide limit (code 4) are its own.
  const meters = new Map<string, UsageMeter>();
  const usageOf = (app: string): UsageMeter => {
    let m = meters.get(app);
    if (!m) {
      m = new UsageMeter(opts.limits?.wallClock ? () => Date.now() : () => clock.now().getTime(), opts.limits);
      meters.set(app, m);
    }
    return m;
  };
  const requests: RecordedRequest[] = [];
  /** Rate-limit windows started through rateLimitFor (the control API's rate-limit), per app: their end, simulated ms. */
  const rateLimitedUntilOf = new Map<string, number>();
  const rateLimitedUntil = (app: string = appId) => rateLimitedUntilOf.get(app) ?? 0;
  /** Sockets held open by 'timeout' faults: destroyed on close(). */
  const held = new Set<Socket>();

  const ctx: SimContext = {
    state,
    signer,
    renderer,
    appId,
    appSecret,
    linkLifetimeMs,
    codeResponseShape: opts.codeResponseShape ?? 'flat',
    maxLimit,
    shortPages: opts.shortPages ?? true,
    baseUrl: () => baseUrl,
    graphUrl: () => `${baseUrl}/graph`,
    autoApprove: () => sim.autoApprove,
  };

  function write(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
    res.writeHead(reply.status, reply.headers ?? {});
    if (typeof reply.body === 'string' || Buffer.isBuffer(reply.body)) {
      res.end(req.method === 'HEAD' ? undefined : reply.body);
      return;
    }
    const stream = reply.body;
    if (req.method === 'HEAD') {
      stream.destroy();
      res.end();
      return;
    }
    // A reader that stops (a copy over its cap) closes the response: the stream stops with it.
    res.once('close', () => stream.destroy());
    stream.pipe(res);
  }

  function streamHuge(res: ServerResponse, status: number, sizeBytes: number, headers: Record<string, string>): void {
    // Valid JSON of exactly sizeBytes: {"filler":"aaaa…"}; written with backpressure.
    const prefix = '{"filler":"';
    const suffix = '"}';
    const total = Math.max(sizeBytes, prefix.length + suffix.length);
    let left = total - prefix.length - suffix.length;
    const chunk = Buffer.alloc(64 * 1024, 'a');
    res.writeHead(status, {
      ...headers,
      'content-type': 'application/json; charset=UTF-8',
      'content-length': String(total),
    });
    res.write(prefix);
    const pump = (): void => {
      while (left > 0) {
        if (res.destroyed) return;
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
          res.once('drain', pump);
          return;
        }
      }
      res.end(suffix);
    };
    pump();
  }

  async function serve(listener: 'main' | 'cdn', req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://simulator');
    const pathname = url.pathname;
    const method = req.method ?? 'GET';
    const query = Object.fromEntries(url.searchParams) as Record<string, string>;

    if (listener === 'main' && pathname.startsWith('/__sim/')) {
      // The control API: from this machine only, with the control secret (R-SIM-1).
      if (!isLoopback(req.socket.remoteAddress)) {
        write(req, res, json(403, { error: 'the control API answers on this machine only' }));
        return;
      }
      if (!controlAuthorized(req.headers.authorization, controlSecret)) {
        write(
          req,
          res,
          json(401, { error: 'missing or wrong control secret (Authorization: Bearer <SIMULATOR_CONTROL_SECRET>)' }),
        );
        return;
      }
      const body = method === 'GET' || method === 'HEAD' ? '' : await readBody(req);
      write(
        req,
        res,
        handleControl(ctx, method, pathname, body, {
          requests,
          faultCount: () => faults.size,
          rateLimitFor: (seconds, app) => sim.rateLimitFor(seconds, app ? { appId: app } : {}),
          rateLimitedUntil: () => rateLimitedUntil(),
          addApp: () => sim.addApp(),
          resetAppSecret: (app) => sim.resetAppSecret(app),
          restrictApp: (app, restricted) => sim.restrictApp(app, restricted),
        }),
      );
      return;
    }
    const recordHost: RequestHost | undefined =
      listener === 'cdn'
        ? 'cdn'
        : /^\/graph(\/|$)/.test(pathname)
          ? 'graph'
          : /^\/oauth(\/|$)/.test(pathname)
            ? 'oauth'
            : undefined;
    const prefix = recordHost === 'graph' ? '/graph' : recordHost === 'oauth' ? '/oauth' : '';
    if (!recordHost) {
      const m = /^\/(p|reel)\/([A-Za-z0-9_-]+)\/?$/.exec(pathname);
      if (m && method === 'GET') {
        write(
          req,
          res,
          htmlPage(
            200,
            `Post ${m[2]}`,
            html`<h1>Simulated post ${m[2]}</h1><p>This is the post page of the platform simulator.</p>`,
          ),
        );
      } else {
        write(
          req,
          res,
          json(404, { error: { message: `Unknown path ${pathname}`, type: 'GraphMethodException', code: 100 } }),
        );
      }
      return;
    }

    let form: Record<string, string> | undefined;
    if (method === 'POST' && /application\/x-www-form-urlencoded/i.test(req.headers['content-type'] ?? '')) {
      form = Object.fromEntries(new URLSearchParams(await readBody(req)));
    }
    const record: RecordedRequest = {
      method,
      host: recordHost,
      path: pathname,
      query,
      at: clock.now(),
      wallAt: Date.now(),
      status: 0,
    };
    if (form) record.form = form;
    requests.push(record);

    const tokenRecord = query.access_token ? state.tokens.get(query.access_token) : undefined;
    const accountForUsage = tokenRecord?.accountId;
    // The app whose budget the call spends: its token's (a call without a token: the first app).
    const appForUsage = tokenRecord?.appId ?? appId;
    const usage = usageOf(appForUsage);
    const usageHeaders = (accountId: string | undefined, regain = 0): Record<string, string> =>
      recordHost === 'graph' ? usage.headers(accountId, regain) : {};
    if (recordHost === 'graph' && clock.now().getTime() < rateLimitedUntil(appForUsage)) {
      // A window started by hand (rateLimitFor): the app's calls are spent until it ends.
      const regain = Math.max(1, Math.ceil((rateLimitedUntil(appForUsage) - clock.now().getTime()) / 60_000));
      const reply = rateLimitReply(4, usage.headers(accountForUsage, regain));
      record.status = reply.status;
      write(req, res, reply);
      return;
    }
    if (recordHost === 'graph') {
      // R-OWN-1: past a limit the platform answers code 4 or 17 and says when to come back.
      const throttle = usage.check(accountForUsage);
      if (throttle) {
        const reply = rateLimitReply(throttle.code, usage.headers(accountForUsage, throttle.regainMinutes));
        record.status = reply.status;
        write(req, res, reply);
        return;
      }
      usage.count(accountForUsage);
    }

    const fault = faults.take({ host: recordHost, path: pathname, query });
    let reply: Reply;
    if (fault?.kind === 'answered-unsent') {
      // The platform acts on the request (state changes), but its answer is never sent.
      const r: SimRequest = { method, path: pathname.slice(prefix.length) || '/', query, form };
      const done =
        recordHost === 'graph'
          ? handleGraph(ctx, r)
          : recordHost === 'oauth'
            ? handleOAuth(ctx, r)
            : await handleCdn(ctx, r);
      record.status = done.status;
      held.add(req.socket);
      req.socket.once('close', () => held.delete(req.socket));
      return;
    }
    if (fault) {
      const action = faultAction(fault, (regain) => usage.headers(accountForUsage, regain));
      if (action.kind === 'timeout') {
        // Never answer: the client's own timeout has to give up.
        held.add(req.socket);
        req.socket.once('close', () => held.delete(req.socket));
        return;
      }
      if (action.kind === 'reset') {
        req.socket.destroy();
        return;
      }
      if (action.kind === 'huge') {
        record.status = action.status;
        streamHuge(res, action.status, action.sizeBytes, usageHeaders(accountForUsage));
        return;
      }
      reply = action.reply;
      reply.headers = { ...usageHeaders(accountForUsage), ...reply.headers };
    } else {
      const r: SimRequest = { method, path: pathname.slice(prefix.length) || '/', query, form };
      if (recordHost === 'graph') reply = handleGraph(ctx, r);
      else if (recordHost === 'oauth') reply = handleOAuth(ctx, r);
      else reply = await handleCdn(ctx, r);
      reply.headers = { ...usageHeaders(reply.accountId ?? accountForUsage), ...reply.headers };
    }
    record.status = reply.status;
    write(req, res, reply);
  }

  const handler = (listener: 'main' | 'cdn') => (req: IncomingMessage, res: ServerResponse) => {
    serve(listener, req, res).catch((err: unknown) => {
      // Never a token in the simulator's own output: the message is redacted.
      process.stderr.write(
        `[simulator] internal error: ${redactText(err instanceof Error ? err.message : String(err))}\n`,
      );
      if (!res.headersSent)
        write(req, res, json(500, { error: { message: 'simulator internal error', type: 'SimulatorError', code: 1 } }));
      else res.destroy();
    });
  };

  const main = createServer(handler('main'));
  const cdn = createServer(handler('cdn'));
  const mainAddr = await listen(main, host, opts.port ?? 0);
  let cdnAddr: AddressInfo;
  try {
    cdnAddr = await listen(cdn, host, opts.imagePort ?? 0);
  } catch (err) {
    await new Promise<void>((resolve) => main.close(() => resolve()));
    throw err;
  }
  const urlHost = host.includes(':') ? `[${host}]` : host;
  baseUrl = `http://${urlHost}:${mainAddr.port}`;
  imageBaseUrl = `http://${urlHost}:${cdnAddr.port}`;

  let closed = false;
  const sim: Simulator = {
    url: baseUrl,
    graphUrl: `${baseUrl}/graph`,
    authorizeUrl: `${baseUrl}/oauth/authorize`,
    oauthTokenUrl: `${baseUrl}/oauth/access_token`,
    imageBaseUrl,
    imageHost: hostPart(imageBaseUrl),
    appId,
    appSecret,
    controlSecret,
    port: mainAddr.port,
    imagePort: cdnAddr.port,
    linkKey,
    clock,
    requests,
    autoApprove: null,
    createAccount: (o) => state.createAccount(o),
    addPost: (accountId, spec) => state.addPost(accountId, spec),
    updatePost: (accountId, mediaId, patch) => state.updatePost(accountId, mediaId, patch),
    deletePost: (accountId, mediaId) => state.deletePost(accountId, mediaId),
    addRawItem: (accountId, item) => state.addRawItem(accountId, item),
    clearRawItems: (accountId) => state.clearRawItems(accountId),
    setEndlessPaging: (accountId, mode) => state.setEndlessPaging(accountId, mode),
    posts: (accountId) => {
      state.account(accountId);
      return state.listPosts(accountId).map((p) => state.publicPost(p));
    },
    issueShortLivedToken: (accountId, o) =>
      state.issueToken(accountId, 'short', clock.now(), o?.scopes, o?.appId ?? appId),
    issueLongLivedToken: (accountId, o) => state.issueToken(accountId, 'long', o?.issuedAt ?? clock.now(), o?.scopes),
    setPasswordChanged: (accountId, changed) => state.setPasswordChanged(accountId, changed),
    revokeTokens: (accountId) => state.revokeTokens(accountId),
    accountOfToken: (token) => state.tokens.get(token)?.accountId,
    expireTokens: (accountId) => state.expireTokens(accountId),
    rateLimitFor: (seconds, o) => {
      if (!(seconds >= 0) || !Number.isFinite(seconds)) throw new Error('simulator: seconds must be >= 0');
      const app = o?.appId ?? appId;
      state.app(app);
      const until = seconds === 0 ? 0 : clock.now().getTime() + Math.round(seconds * 1000);
      rateLimitedUntilOf.set(app, until);
      return new Date(until || clock.now().getTime());
    },
    addApp: () => {
      const app = state.addApp(newSecret, newAppId);
      return { appId: app.appId, appSecret: app.secret };
    },
    resetAppSecret: (app) => {
      const record = state.app(app);
      record.secret = newSecret();
      onSecret(record.secret);
      return { appId: app, appSecret: record.secret };
    },
    restrictApp: (app, restricted) => {
      state.app(app).restricted = restricted;
    },
    injectFault: (f) => faults.add(f),
    clearFaults: () => faults.clear(),
    graphGet: (path, query) => {
      const reply = handleGraph(ctx, { method: 'GET', path, query });
      // A graph reply is text (only media files are streamed).
      if (typeof reply.body !== 'string' && !Buffer.isBuffer(reply.body))
        throw new Error('simulator: graph reply streamed');
      return { status: reply.status, body: reply.body.toString() };
    },
    close: async () => {
      if (closed) return;
      closed = true;
      for (const s of held) s.destroy();
      held.clear();
      const stop = (s: Server) =>
        new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeAllConnections();
        });
      await Promise.all([stop(main), stop(cdn)]);
    },
  };
  return sim;
}
