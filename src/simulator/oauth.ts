import { DEPRECATED_SCOPE, GRANT_AUTHORIZATION_CODE, SCOPE } from '../platform/identifiers.ts';
import type { SimContext, SimRequest } from './context.ts';
import { html, join, raw } from '../util/html.ts';
import { htmlPage, json, loginError, type Reply } from './reply.ts';

/**
 * The login: the consent page (every account with its name and picture, one Allow each, and Deny), the decision that
 * redirects back with a code, and the code-for-short-lived-token exchange (the code is
 * single-use and lives one hour; the answer comes in one of two documented shapes).
 */

const KNOWN_SCOPES = new Set([
  SCOPE,
  'instagram_business_content_publish',
  'instagram_business_manage_messages',
  'instagram_business_manage_comments',
  'instagram_business_manage_insights',
]);

interface LoginParams {
  clientId: string;
  redirectUri: string;
  scopes: string[];
  state: string | undefined;
}

/** The authorize parameters, or the error page a browser would see. */
function validate(ctx: SimContext, p: Record<string, string>): LoginParams | Reply {
  // Any app registered with the platform (the simulator's own and those added since).
  if (!p.client_id || !ctx.state.apps.has(p.client_id))
    return htmlPage(400, 'Invalid request', html`<h1>Invalid request</h1><p>Invalid platform app ID.</p>`);
  const redirectUri = p.redirect_uri ?? '';
  let parsed: URL | undefined;
  try {
    parsed = new URL(redirectUri);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !/^https?:$/.test(parsed.protocol)) {
    return htmlPage(
      400,
      'Invalid request',
      html`<h1>Invalid request</h1><p>Invalid redirect_uri: it must be an absolute http(s) URL.</p>`,
    );
  }
  if (p.response_type !== undefined && p.response_type !== 'code') {
    return htmlPage(
      400,
      'Invalid request',
      html`<h1>Invalid request</h1><p>Unsupported response_type: only code is supported.</p>`,
    );
  }
  const scopes = (p.scope ?? '')
    .split(/[,\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  // R-TOK-12: the deprecated scope value is refused.
  const invalid = scopes.filter((s) => !KNOWN_SCOPES.has(s));
  if (invalid.length > 0) {
    const note = invalid.includes(DEPRECATED_SCOPE)
      ? ` The scope ${DEPRECATED_SCOPE} is deprecated: use ${SCOPE}.`
      : '';
    return htmlPage(
      400,
      'Invalid scope',
      html`<h1>Invalid Scopes: ${invalid.join(', ')}</h1><p>Invalid scope.${note}</p>`,
    );
  }
  if (!scopes.includes(SCOPE))
    return htmlPage(400, 'Invalid scope', html`<h1>Invalid scope</h1><p>The scope ${SCOPE} is required.</p>`);
  return { clientId: p.client_id, redirectUri, scopes, state: p.state };
}

function redirect(location: string): Reply {
  return { status: 302, headers: { location, 'content-type': 'text/plain; charset=utf-8' }, body: 'Redirecting' };
}

function approve(ctx: SimContext, params: LoginParams, accountId: string): Reply {
  const code = ctx.state.issueCode({
    accountId,
    clientId: params.clientId,
    redirectUri: params.redirectUri,
    scopes: params.scopes,
  });
  const to = new URL(params.redirectUri);
  to.searchParams.set('code', code);
  if (params.state !== undefined) to.searchParams.set('state', params.state);
  // The platform appends `#_` to the redirect; browsers keep fragments to themselves.
  return redirect(`${to.toString()}#_`);
}

function deny(params: LoginParams): Reply {
  const to = new URL(params.redirectUri);
  to.searchParams.set('error', 'access_denied');
  to.searchParams.set('error_reason', 'user_denied');
  to.searchParams.set('error_description', 'The user denied your request.');
  if (params.state !== undefined) to.searchParams.set('state', params.state);
  return redirect(to.toString());
}

const CONSENT_STYLE =
  'body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0;padding:2rem 1rem;color:#1c1e21}' +
  'main{max-width:28rem;margin:0 auto;background:#fff;border-radius:12px;padding:1.5rem;box-shadow:0 1px 4px #0002}' +
  'h1{font-size:1.25rem;margin:0 0 .5rem}p.scopes{color:#555;font-size:.9rem}' +
  'ul{list-style:none;padding:0;margin:1rem 0}li{margin:.5rem 0}' +
  'li form{display:flex;align-items:center;gap:.75rem;border:1px solid #ddd;border-radius:10px;padding:.6rem .75rem}' +
  'li img,li .none{width:44px;height:44px;border-radius:50%;background:#ccd}' +
  '.who{flex:1;display:flex;flex-direction:column}.who small{color:#666}' +
  'button{font:inherit;border:0;border-radius:8px;padding:.45rem .8rem;cursor:pointer}' +
  'button[name=allow]{background:#0866ff;color:#fff}button[name=deny]{background:#e4e6eb}';

/**
 * The consent page: every account this login could be (the demo's and a few others), each with
 * its name and profile picture and its own Allow button (the form field `account_id` says which:
 * tests post it directly), and Deny.
 */
function authorizePage(ctx: SimContext, params: LoginParams): Reply {
  const hidden = (extra: Record<string, string>) =>
    Object.entries({
      client_id: params.clientId,
      redirect_uri: params.redirectUri,
      scope: params.scopes.join(','),
      state: params.state ?? '',
      ...extra,
    }).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`);
  const avatar = (a: { id: string; profilePicture: boolean }) =>
    a.profilePicture
      ? html`<img alt="" src="${ctx.signer.sign(
          { accountId: a.id, mediaId: a.id, slot: 'profile', ext: 'jpg' },
          ctx.state.clock.now().getTime() + ctx.linkLifetimeMs,
        )}">`
      : html`<span class="none"></span>`;
  const items = [...ctx.state.accounts.values()].map(
    (a) =>
      html`<li><form method="post" action="/oauth/authorize/decision">${hidden({ decision: 'allow', account_id: a.id })}${avatar(a)}<span class="who"><strong>${a.name}</strong><small>@${a.username}</small></span><button type="submit" name="allow" data-account="${a.id}">Allow as @${a.username}</button></form></li>`,
  );
  const denyForm = html`<form method="post" action="/oauth/authorize/decision">${hidden({ decision: 'deny' })}<button type="submit" name="deny">Deny</button></form>`;
  return htmlPage(
    200,
    'Log in and allow access',
    html`<main><h1>Allow access to your account</h1><p>Choose the account to connect.</p><p class="scopes">The app ${params.clientId} asks for: ${params.scopes.join(', ')}</p><ul class="accounts">${join(items, '\n')}</ul>\n${denyForm}</main>`,
    // The page's look is a constant of ours.
    html`<meta name="viewport" content="width=device-width"><style>${raw(CONSENT_STYLE)}</style>`,
  );
}

export function handleOAuth(ctx: SimContext, r: SimRequest): Reply {
  if (r.path === '/authorize' && r.method === 'GET') {
    const params = validate(ctx, r.query);
    if (!('clientId' in params)) return params;
    const auto = ctx.autoApprove();
    if (auto !== null) {
      if (!ctx.state.accounts.has(auto))
        return htmlPage(500, 'Simulator', html`<p>autoApprove names no account (${auto}).</p>`);
      return approve(ctx, params, auto);
    }
    return authorizePage(ctx, params);
  }
  if (r.path === '/authorize/decision' && r.method === 'POST') {
    const form = r.form ?? {};
    const params = validate(ctx, form);
    if (!('clientId' in params)) return params;
    if (form.decision === 'deny') return deny(params);
    if (form.decision !== 'allow' || !form.account_id || !ctx.state.accounts.has(form.account_id)) {
      return htmlPage(400, 'Invalid request', html`<p>Unknown decision or account.</p>`);
    }
    return approve(ctx, params, form.account_id);
  }
  if (r.path === '/access_token' && r.method === 'POST') return codeExchange(ctx, r.form ?? {});
  return json(404, {
    error_type: 'OAuthException',
    code: 404,
    error_message: `No such endpoint: ${r.method} /oauth${r.path}`,
  });
}

/** POST /oauth/access_token: the login code for a short-lived token (form fields). */
function codeExchange(ctx: SimContext, f: Record<string, string>): Reply {
  const app = f.client_id ? ctx.state.apps.get(f.client_id) : undefined;
  if (!app) return loginError(400, 'Invalid platform app ID');
  if (f.client_secret !== app.secret) return loginError(101, 'Error validating client secret.');
  if (f.grant_type !== GRANT_AUTHORIZATION_CODE)
    return loginError(400, 'Unsupported grant_type: expected authorization_code');
  const code = f.code ? ctx.state.codes.get(f.code) : undefined;
  if (!code) return loginError(100, 'Invalid authorization code');
  // A code works only for the app whose login made it.
  if (code.clientId !== app.appId) return loginError(100, 'Invalid authorization code');
  if (code.used) return loginError(100, 'This authorization code has been used');
  if (ctx.state.clock.now().getTime() >= code.expiresAt.getTime())
    return loginError(100, 'This authorization code has expired');
  if (f.redirect_uri !== code.redirectUri)
    return loginError(
      100,
      'Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request',
    );
  code.used = true;
  // R-TOK-14: development-mode app, account without the tester role.
  if (!ctx.state.account(code.accountId).tester) return loginError(400, 'Insufficient developer role');
  const token = ctx.state.issueToken(code.accountId, 'short', ctx.state.clock.now(), code.scopes, app.appId);
  if (ctx.codeResponseShape === 'data') {
    return json(200, { data: [{ access_token: token, user_id: code.accountId, permissions: code.scopes.join(',') }] });
  }
  return json(200, { access_token: token, user_id: code.accountId, permissions: code.scopes });
}
