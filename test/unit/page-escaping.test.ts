import { describe, expect, it } from 'vitest';
import { loginPage } from '../../src/http/auth/login-page.ts';
import { handleOAuth } from '../../src/simulator/oauth.ts';
import type { SimContext } from '../../src/simulator/context.ts';
import { SimState } from '../../src/simulator/state.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { escapeHtml } from '../../src/util/html.ts';
import { renderEveryPage } from '../support/every-page.ts';

/**
 * Every page kind, rendered once with a plain value and once with a hostile one in every value
 * that comes from outside the code (test/support/every-page.ts): the hostile value shows as text,
 * escaped, and adds no element and no attribute. The markup's shape (each tag with its
 * attribute names, in order) is the same as with the plain value.
 */
const HOSTILE = `"'><x-evil onmouseover=alert(1) a='b'>&amp;</x-evil><script>alert(1)</script>`;
const PLAIN = 'plain';

/** Each tag of a document with its attribute names: what an injection would change. */
function shape(doc: string): string[] {
  const out: string[] = [];
  const tag = /<(\/?[A-Za-z][A-Za-z0-9-]*)((?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)\s*\/?>/g;
  const attr = /([^\s"'>/=]+)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?/g;
  for (const m of doc.matchAll(tag)) {
    const names = [...(m[2] ?? '').matchAll(attr)].map((a) => a[1]!.toLowerCase());
    out.push([m[1]!.toLowerCase(), ...names].join(' '));
  }
  return out;
}

function expectEscaped(name: string, plain: string, hostile: string, value = HOSTILE): void {
  expect(shape(hostile), `${name}: the hostile value changed the markup`).toEqual(shape(plain));
  expect(hostile, `${name}: the hostile value never reached the page`).toContain(escapeHtml(value));
  expect(hostile).not.toContain('<x-evil');
  expect(hostile).not.toContain('<script>alert');
}

describe('an unmarked value is escaped on every page', () => {
  const plain = renderEveryPage(PLAIN);
  const hostile = renderEveryPage(HOSTILE);

  it('renders every kind of page (the dashboard, the owner pages)', () => {
    expect(Object.keys(hostile).length).toBeGreaterThanOrEqual(25);
    expect(Object.keys(hostile)).toEqual(Object.keys(plain));
  });

  for (const name of Object.keys(plain))
    it(name, () => {
      expectEscaped(name, plain[name]!, hostile[name]!);
    });

  it('the login page', () => {
    // Its next field has passed safeNext, and its message is ours: both escaped all the same.
    const page = (v: string) => loginPage({ csrf: `csrf${v}`, next: `/dashboard${v}`, message: `message ${v}` });
    expectEscaped('login', page(PLAIN), page(HOSTILE));
    expect(loginPage({ csrf: 'c', next: '/dashboard' })).not.toContain('role="alert"');
  });

  it("the simulator's consent page and its error pages", () => {
    const page = (v: string, query: Record<string, string> = {}) => {
      const clock = new ManualClock(new Date('2026-03-01T12:00:00Z'));
      const state = new SimState(
        clock,
        () => 'http://sim.test',
        () => undefined,
      );
      // The app the consent page is asked for must be registered with the platform (the simulator keeps several).
      state.apps.set(`app${v}`, { appId: `app${v}`, secret: 'secret', restricted: false });
      state.createAccount({ username: 'shop', name: `Shop ${v}` });
      state.createAccount({ username: 'other', profilePicture: false });
      const ctx = {
        state,
        signer: { sign: () => `https://sim.test/img?sig=${encodeURIComponent(v)}` },
        appId: `app${v}`,
        appSecret: 'secret',
        linkLifetimeMs: 60_000,
        autoApprove: () => null,
      } as unknown as SimContext;
      const q = {
        client_id: `app${v}`,
        redirect_uri: `https://site.test/callback?x=${encodeURIComponent(v)}`,
        scope: 'instagram_business_basic',
        state: `state${v}`,
        response_type: 'code',
        ...query,
      };
      const { body } = handleOAuth(ctx, { method: 'GET', path: '/authorize', query: q });
      // An HTML page is a string or a Buffer, never a stream.
      if (typeof body !== 'string' && !Buffer.isBuffer(body)) throw new Error('the consent page came as a stream');
      return body.toString();
    };
    expectEscaped('consent', page(PLAIN), page(HOSTILE));
    // A scope is split at spaces and commas: one word of markup.
    const word = `"'><x-evil/a='b'>&amp;</x-evil><script>alert(1)</script>`;
    const badScope = (v: string) => page(v, { scope: `instagram_business_basic,${v}` });
    expectEscaped('invalid scope', badScope(PLAIN), badScope(word), word);
  });
});
