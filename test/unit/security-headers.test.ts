import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { cspWithFormRedirects } from '../../src/http/security-headers.ts';
import { silentLogger } from '../../src/util/logger.ts';

/**
 * The one page whose form redirects to another origin (the owner's Reconnect: 303 to the
 * platform's login) gets the policy every page has, with that origin added to form-action and
 * nothing else changed; anything but an http(s) origin is refused, so no page can be handed a
 * looser policy by mistake.
 */
let server: Server;
let everyPage = '';

beforeAll(async () => {
  server = createServer(createApp({ logger: silentLogger }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`);
  everyPage = res.headers.get('content-security-policy') ?? '';
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

describe('Content-Security-Policy form-action', () => {
  it("every page: form-action 'self' alone; the same policy as cspWithFormRedirects([])", () => {
    expect(everyPage).toContain("form-action 'self';");
    expect(cspWithFormRedirects([])).toBe(everyPage);
  });

  it('R-OWN-15: the Reconnect page adds the login origin to form-action, and only there', () => {
    const policy = cspWithFormRedirects(['https://www.instagram.com']);
    expect(policy).toContain("form-action 'self' https://www.instagram.com;");
    expect(policy.replace(' https://www.instagram.com', '')).toBe(everyPage);
    expect(cspWithFormRedirects(['http://127.0.0.1:40123'])).toContain("form-action 'self' http://127.0.0.1:40123;");
  });

  it('anything but an http(s) origin is refused', () => {
    for (const bad of [
      'https://www.instagram.com/oauth/authorize',
      'https://www.instagram.com/',
      'javascript:alert(1)',
      'data:text/html,x',
      "'unsafe-inline'",
      'https://a.example; script-src *',
    ])
      expect(() => cspWithFormRedirects([bad]), bad).toThrow();
  });
});
