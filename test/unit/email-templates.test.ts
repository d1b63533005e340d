import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BUILT_IN_TEMPLATES_DIR,
  EMAIL_NAMES,
  EmailTemplateError,
  loadEmailTemplates,
  maskEmail,
  renderEmail,
  type EmailName,
  type EmailVars,
} from '../../src/alerts/templates.ts';
import { preflight } from '../../src/cli/preflight.ts';
import { compileTemplate } from '../../src/util/template.ts';

/**
 * Every email, rendered from its templates with realistic and with hostile values: both parts
 * carry the account, the figures, what to do and the link; the HTML part escapes every value; no
 * part shows markdown (backticks, **, [text](url)).
 */
const HOSTILE_USER = 'shop<script>alert(1)</script>`rm`';
const HOSTILE_CAUSE = 'the password was changed <img src=x onerror=alert(2)> `code` & "quotes"';
const EXPIRES = new Date('2026-03-21T15:00:00Z');
const LINK_EXPIRES = new Date('2026-04-04T09:00:00Z');
const RECONNECT = 'https://feeds.example.com/reconnect/AbC_123?x=1&y=2';
const DASHBOARD = 'https://feeds.example.com/dashboard';
const BRAND = {
  name: 'Northwind <Studio> & Co',
  logoUrl: 'https://cdn.example.com/logo.png?a=1&b="2"',
  supportEmail: 'help@northwind.example',
  accentColor: '#0f766e',
};

type Sample = { [N in EmailName]: { name: N; vars: EmailVars[N]; link: string; mustSay: string[] } }[EmailName];

function samples(username: string, cause: string): Sample[] {
  const notified = { maskedEmail: maskEmail('jane@example.com'), at: new Date('2026-03-15T09:00:00Z') };
  return [
    {
      name: 'operator-expiry',
      vars: {
        username,
        accountId: '17841400000000001',
        daysLeft: 6,
        expiresAt: EXPIRES,
        dashboardUrl: DASHBOARD,
        reason: cause,
      },
      link: DASHBOARD,
      mustSay: [
        'in 6 days',
        '2026-03-21',
        'Saturday, 21 March 2026, 15:00 UTC',
        'What to do',
        // A link bound to this account, not an invitation (which would connect any account).
        'feedmirror accounts reconnect-link 17841400000000001',
        'Email a new link',
      ],
    },
    {
      name: 'operator-expiry',
      vars: {
        username,
        accountId: '17841400000000001',
        daysLeft: 0,
        expiresAt: EXPIRES,
        dashboardUrl: DASHBOARD,
        ownerNotified: notified,
        brand: BRAND,
      },
      link: DASHBOARD,
      mustSay: [
        'in less than a day',
        'The owner (j***@example.com) was told on Sunday, 15 March 2026, 09:00 UTC and can reconnect with their own link.',
      ],
    },
    {
      name: 'operator-reauth',
      vars: { username, accountId: '17841400000000002', cause, expiresAt: EXPIRES, dashboardUrl: DASHBOARD },
      link: DASHBOARD,
      mustSay: ['no longer works', 'What to do', '2026-03-21'],
    },
    {
      name: 'operator-reauth',
      vars: {
        username,
        accountId: '17841400000000002',
        cause,
        dashboardUrl: DASHBOARD,
        ownerNotified: notified,
        brand: BRAND,
      },
      link: DASHBOARD,
      mustSay: [
        'The owner (j***@example.com) was told on Sunday, 15 March 2026, 09:00 UTC and can reconnect with their own link.',
      ],
    },
    {
      name: 'operator-app',
      vars: {
        app: username,
        cause: `refuses the secret of app ${username}`,
        fix: 'run feedmirror apps set acme --secret-file <file>.',
        accounts: 3,
        dashboardUrl: DASHBOARD,
        brand: BRAND,
      },
      link: DASHBOARD,
      mustSay: ['What to do', '3 account(s)'],
    },
    {
      name: 'owner-expiry',
      vars: {
        username,
        daysLeft: 13,
        expiresAt: EXPIRES,
        reconnectUrl: RECONNECT,
        linkExpiresAt: LINK_EXPIRES,
        brand: BRAND,
      },
      link: RECONNECT,
      mustSay: [
        'in 13 days',
        'Saturday, 21 March 2026, 15:00 UTC',
        'What to do',
        'Saturday, 4 April 2026, 09:00 UTC',
        'Reconnect',
      ],
    },
    {
      name: 'owner-reauth',
      vars: {
        username,
        cause,
        reconnectUrl: RECONNECT,
        linkExpiresAt: LINK_EXPIRES,
        statusUrl: 'https://feeds.example.com/owner/status/xyz',
        brand: BRAND,
      },
      link: RECONNECT,
      mustSay: ['stopped', 'What to do', 'Saturday, 4 April 2026, 09:00 UTC', 'Reconnect'],
    },
    {
      name: 'owner-invitation',
      vars: {
        connectUrl: RECONNECT,
        linkExpiresAt: LINK_EXPIRES,
        username,
        ownerName: 'Jane <b>',
        ownerEmail: 'jane@example.com',
        brand: BRAND,
      },
      link: RECONNECT,
      // Whom it is for, and until when (an invitation emailed by `accounts invite --send`).
      mustSay: [
        'What to do',
        'This invitation is for jane@example.com.',
        'Saturday, 4 April 2026, 09:00 UTC',
        'Connect your account',
      ],
    },
  ];
}

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"'`]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' })[c]!,
  );
/** What a reader sees of the HTML part: tags dropped, entities decoded. */
const visible = (html: string) =>
  html
    .replace(/<(style|title)[\s\S]*?<\/\1>/g, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#96;/g, '`')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');

/** Opening and closing tags pair up (void elements aside): well-formed enough for any mail client. */
function unbalancedTags(html: string): string[] {
  const VOID = new Set(['meta', 'img', 'br', 'hr', 'link', 'input']);
  const stack: string[] = [];
  const problems: string[] = [];
  for (const m of html.replace(/<!doctype[^>]*>/i, '').matchAll(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)\b[^>]*?(\/?)>/g)) {
    const [, close, rawName, selfClose] = m;
    const name = rawName!.toLowerCase();
    if (VOID.has(name) || selfClose) continue;
    if (!close) stack.push(name);
    else if (stack.pop() !== name) problems.push(`</${name}> at ${m.index}`);
  }
  return [...problems, ...stack.map((s) => `<${s}> never closed`)];
}

const MARKDOWN = [
  /`/,
  /\*\*[^*\s][^*]*\*\*/,
  /(^|\s)\*[^*\s][^*]*\*(\s|$)/,
  /\[[^\]]*\]\([^)]*\)/,
  /^#{1,6} /m,
  /(^|\s)_[^_\s][^_]*_(\s|$)/,
];

describe('R-EML-1: every email template renders both parts', () => {
  it('covers every email name', () => {
    expect(new Set(samples('studio.north', 'x').map((s) => s.name))).toEqual(new Set(EMAIL_NAMES));
  });

  for (const [label, username, cause] of [
    ['realistic values', 'studio.north', 'the account password was changed'],
    ['hostile values', HOSTILE_USER, HOSTILE_CAUSE],
  ] as const) {
    describe(label, () => {
      for (const s of samples(username, cause)) {
        it(`${s.name}${'ownerNotified' in s.vars && s.vars.ownerNotified ? ' (owner told)' : ''}`, () => {
          const m = renderEmail(s.name, s.vars);
          // Subject: one non-empty line naming the account.
          expect(m.subject.trim().length).toBeGreaterThan(10);
          expect(m.subject).not.toMatch(/[\r\n]/);
          if (s.name === 'operator-app') expect(m.subject).toMatch(/: app .+ needs fixing$/);
          else if (s.name !== 'owner-invitation') expect(m.subject).toContain('@');
          if (s.name === 'operator-reauth') expect(m.subject).toContain('must log in again');
          // Both parts carry the link; the HTML as an href, escaped.
          expect(m.text).toContain(s.link);
          expect(m.html).toContain(`href="${escapeHtml(s.link)}"`);
          // A button: the main action is a link styled as one, in a table cell with a background.
          expect(m.html).toMatch(
            /<td style="[^"]*background-color:#[0-9a-f]{6}[^"]*"><a href="[^"]+" style="display:inline-block;/,
          );
          // Inline styles only: no <style> block, no class, no script.
          expect(m.html).not.toMatch(/<style|class=|<script/i);
          expect(unbalancedTags(m.html)).toEqual([]);
          expect(m.html.startsWith('<!doctype html>')).toBe(true);
          // What it must say, in both parts.
          const seen = visible(m.html);
          for (const phrase of s.mustSay) {
            expect(m.text, phrase).toContain(phrase);
            expect(seen, phrase).toContain(phrase);
          }
          if ('username' in s.vars && s.vars.username) {
            const shown = s.vars.username.replace(/`/g, "'");
            expect(m.text).toContain(`@${shown}`);
            expect(seen).toContain(`@${shown}`);
          }
          // No markdown in either part, whatever the values held.
          for (const re of MARKDOWN) {
            expect(m.text, String(re)).not.toMatch(re);
            expect(m.html, String(re)).not.toMatch(re);
            expect(m.subject, String(re)).not.toMatch(re);
          }
          // Every value escaped: the hostile markup is text, never a tag or an attribute.
          expect(m.html).not.toMatch(/<(script|img src=x|b>)/i);
          expect(m.html).not.toContain('onerror=alert(2)>');
          if (label === 'hostile values' && s.name !== 'owner-invitation') {
            expect(m.html).toContain('shop&lt;script&gt;alert(1)&lt;/script&gt;');
          }
        });
      }
    });
  }

  it('brands the email: name, logo, support address, accent colour and a readable button text', () => {
    const m = renderEmail('owner-reauth', {
      username: 'studio.north',
      cause: 'the password was changed',
      reconnectUrl: RECONNECT,
      linkExpiresAt: LINK_EXPIRES,
      brand: { ...BRAND, accentColor: '#fde047' },
    });
    expect(m.html).toContain(`<img src="${escapeHtml(BRAND.logoUrl)}" alt="Northwind &lt;Studio&gt; &amp; Co"`);
    expect(m.html).toContain('mailto:help@northwind.example');
    expect(m.html).toContain('background-color:#fde047');
    expect(m.html).toContain('color:#111827;text-decoration:none'); // dark text on a light button
    expect(m.text).toContain('Sent by Northwind <Studio> & Co. Questions? Write to help@northwind.example.');
    const plain = renderEmail('owner-reauth', {
      username: 'studio.north',
      cause: 'x',
      reconnectUrl: RECONNECT,
      linkExpiresAt: LINK_EXPIRES,
      brand: { name: 'x', logoUrl: 'http://insecure.example/logo.png', accentColor: 'red; background:url(x)' },
    });
    expect(plain.html).not.toContain('insecure.example');
    expect(plain.html).not.toContain('url(x)');
    expect(plain.html).toContain('background-color:#2563eb');
    expect(plain.html).toContain('color:#ffffff;text-decoration:none');
  });

  it('refuses a link that is not http(s)', () => {
    expect(() =>
      renderEmail('owner-expiry', {
        username: 'a',
        daysLeft: 3,
        expiresAt: EXPIRES,
        reconnectUrl: 'javascript:alert(1)',
        linkExpiresAt: LINK_EXPIRES,
      }),
    ).toThrow(/reconnectUrl must be an http\(s\) URL/);
  });

  it('masks the owner address for the operator copy', () => {
    expect(maskEmail('jane.doe@example.com')).toBe('j***@example.com');
    expect(maskEmail('nobody')).toBe('***');
  });
});

describe('R-EML-2: EMAIL_TEMPLATES_DIR', () => {
  const dirs: string[] = [];
  const folder = (files: Record<string, string>) => {
    const d = mkdtempSync(join(tmpdir(), 'fm-email-tpl-'));
    dirs.push(d);
    for (const [f, body] of Object.entries(files)) writeFileSync(join(d, f), body);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const vars = {
    username: 'studio.north',
    cause: 'the password was changed',
    reconnectUrl: RECONNECT,
    linkExpiresAt: LINK_EXPIRES,
  };

  it('a file in the folder replaces that template; the others stay built in', () => {
    const dir = folder({
      'owner-reauth.txt': 'Subject: {{brand.name}} needs you, @{{username}}\n\nHi! Reconnect here: {{reconnectUrl}}\n',
      'README.md': 'notes for the team',
    });
    const t = loadEmailTemplates(dir);
    expect(t.overridden).toEqual(['owner-reauth.txt']);
    const m = renderEmail('owner-reauth', vars, t);
    expect(m.subject).toBe('feedmirror needs you, @studio.north');
    expect(m.text).toMatch(/^Hi! Reconnect here: https:\/\/feeds\.example\.com\/reconnect/);
    // The HTML part, the layout and the other emails are the built-in ones.
    const builtIn = renderEmail('owner-reauth', vars);
    const untitled = (html: string) => html.replace(/<title>.*<\/title>/, '');
    expect(untitled(m.html)).toBe(untitled(builtIn.html));
    expect(m.html).toContain('<title>feedmirror needs you, @studio.north</title>');
    const other = { username: 'a', accountId: '1', cause: 'x', dashboardUrl: DASHBOARD };
    expect(renderEmail('operator-reauth', other, t)).toEqual(renderEmail('operator-reauth', other));
  });

  it.each([
    [
      'owner-expiry.html',
      '<p>{{#if statusUrl}}<a href="{{reconnectUrl}}">go</a></p>',
      /owner-expiry\.html line 1: \{\{#if statusUrl\}\} is never closed/,
    ],
    [
      'owner-expiry.html',
      '<p>\n<a href="{{reconectUrl}}">go</a></p>',
      /owner-expiry\.html line 2: unknown name \{\{reconectUrl\}\}/,
    ],
    [
      'owner-reauth.txt',
      'Hello {{username}}\n{{reconnectUrl}}',
      /owner-reauth\.txt line 1: must start with "Subject: \.\.\."/,
    ],
    ['owner-reauth.html', '<p>Hello {{username}}</p>', /owner-reauth\.html never uses \{\{reconnectUrl\}\}/],
    ['layout.html', '<html>{{brand.name}}</html>', /layout\.html never uses \{\{body\}\}/],
    ['owner-expire.html', '<p>{{reconnectUrl}}</p>', /owner-expire\.html is not a template feedmirror knows/],
    ['operator-reauth.html', '<p>{{{dashboardUrl}}}</p>', /operator-reauth\.html line 1: unsupported tag/],
  ])('a malformed %s fails with one line naming it', (file, body, message) => {
    const dir = folder({ [file]: body });
    let err: unknown;
    try {
      loadEmailTemplates(dir);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(EmailTemplateError);
    const text = (err as Error).message;
    expect(text).toMatch(message);
    expect(text).toContain(`EMAIL_TEMPLATES_DIR: ${join(dir, file)}`);
    expect(text).not.toContain('\n');
  });

  it('a folder that does not exist is one line too', () => {
    expect(() => loadEmailTemplates('/nonexistent/fm-templates')).toThrow(
      /^EMAIL_TEMPLATES_DIR: \/nonexistent\/fm-templates is not a readable folder$/,
    );
  });

  it('worker and serve refuse to start on a malformed override (preflight, as doctor reports it)', async () => {
    const dir = folder({ 'owner-expiry.html': '<p>{{#if x}}</p>' });
    const env = { TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), EMAIL_TEMPLATES_DIR: dir };
    for (const role of ['worker', 'serve'] as const) {
      const pre = await preflight(env, role);
      expect(pre.ok).toBe(false);
      if (!pre.ok) {
        const line = pre.problems.find((p) => p.startsWith('EMAIL_TEMPLATES_DIR'));
        expect(line).toMatch(/owner-expiry\.html line 1: unknown name \{\{x\}\}/);
      }
    }
    const good = folder({ 'layout.txt': '{{body}}\n\n-- {{brand.name}}\n' });
    expect((await preflight({ ...env, EMAIL_TEMPLATES_DIR: good }, 'worker')).ok).toBe(true);
  });

  it('the built-in folder is what a copy to override starts from', () => {
    expect(loadEmailTemplates(BUILT_IN_TEMPLATES_DIR).overridden).toHaveLength(2 + EMAIL_NAMES.length * 2);
  });
});

describe('the template language', () => {
  const known = new Set(['a', 'b.c']);
  it('escapes in html mode, not in text mode; if/else/unless', () => {
    const src = '{{a}}|{{#if b.c}}yes{{else}}no{{/if}}|{{#unless a}}none{{/unless}}';
    expect(compileTemplate(src, { mode: 'html', known }).render({ a: '<&>"\'`', b: { c: '' } })).toBe(
      '&lt;&amp;&gt;&quot;&#39;&#96;|no|',
    );
    expect(compileTemplate(src, { mode: 'text', known }).render({ a: '<x>', b: { c: 'y' } })).toBe('<x>|yes|');
    expect(compileTemplate(src, { mode: 'text', known }).render({})).toBe('|no|none');
  });
  it('refuses a stray }} or {{/if}}, and an {{else}} out of place', () => {
    expect(() => compileTemplate('a }} b', { mode: 'text', known })).toThrow(/line 1: "}}" without/);
    expect(() => compileTemplate('x\n{{/if}}', { mode: 'text', known })).toThrow(/line 2: \{\{\/if\}\} without/);
    expect(() => compileTemplate('{{else}}', { mode: 'text', known })).toThrow(/outside an/);
    expect(() => compileTemplate('{{#if a}}{{/unless}}', { mode: 'text', known })).toThrow(/closes the \{\{#if\}\}/);
  });
});
