/**
 * Every email feedmirror sends, rendered from template files: one code path, two parts each
 * (text and HTML, sent together as multipart/alternative).
 *
 *   renderEmail(name, vars, templates?) -> { subject, text, html }
 *
 * name               | to       | vars (? = optional)
 * -------------------|----------|-------------------------------------------------------------
 * operator-expiry    | operator | username, accountId, daysLeft, expiresAt, reason?, dashboardUrl,
 *                    |          | ownerNotified?: { maskedEmail, at }, brand?
 * operator-reauth    | operator | username, accountId, cause, expiresAt?, dashboardUrl,
 *                    |          | ownerNotified?: { maskedEmail, at }, brand?
 * owner-expiry       | owner    | username, daysLeft, expiresAt, reconnectUrl, linkExpiresAt, statusUrl?, brand?
 * owner-reauth       | owner    | username, cause (plain words), reconnectUrl, linkExpiresAt, statusUrl?, brand?
 * owner-invitation   | owner    | connectUrl, linkExpiresAt, username?, ownerName?, ownerEmail?, brand?
 * operator-app       | operator | app, cause, fix, accounts, dashboardUrl, brand?
 *
 * With ownerNotified, the operator's copy says "The owner (j***@example.com) was told on <date>
 * and can reconnect with their own link." instead of asking the operator to invite them.
 *
 * Files: src/alerts/email-templates/<name>.txt (first line `Subject: ...`, then the body) and
 * <name>.html (the body), wrapped in layout.txt / layout.html ({{body}}). Syntax: src/util/template.ts.
 * Names a template may use: the table above, formatted for reading (dates as
 * "Saturday, 21 February 2026, 15:00 UTC", plus daysLeftText "in 6 days" and expiresOn
 * "2026-02-21"), and brand.name, brand.logoUrl, brand.supportEmail, brand.accentColor,
 * brand.accentText. EMAIL_TEMPLATES_DIR may hold any of these files; the others stay built in.
 * Every value is HTML-escaped in the HTML part; links must be http(s) (R-EML-1).
 */
import { maskEmail } from '../accounts/owner-contact.ts';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveBrand, type Brand } from '../util/brand.ts';
import {
  compileTemplate,
  safeHtml,
  TemplateSyntaxError,
  type CompiledTemplate,
  type TemplateScope,
} from '../util/template.ts';
// One masking for every surface (the operator's copy, logs), defined with the owner's contact.
export { maskEmail };

export type { Brand } from '../util/brand.ts';

export interface OwnerNotified {
  /** Already masked, e.g. from maskEmail(): the operator's copy never carries the owner's full address. */
  maskedEmail: string;
  at: Date;
}

export interface EmailVars {
  'operator-expiry': {
    username: string;
    accountId: string;
    daysLeft: number;
    expiresAt: Date;
    /** Why the token runs low (e.g. failing refreshes); a default sentence otherwise. */
    reason?: string | undefined;
    dashboardUrl: string;
    ownerNotified?: OwnerNotified | undefined;
    brand?: Brand | undefined;
  };
  'operator-reauth': {
    username: string;
    accountId: string;
    cause: string;
    expiresAt?: Date | null | undefined;
    dashboardUrl: string;
    ownerNotified?: OwnerNotified | undefined;
    brand?: Brand | undefined;
  };
  'owner-expiry': {
    username: string;
    daysLeft: number;
    expiresAt: Date;
    reconnectUrl: string;
    linkExpiresAt: Date;
    statusUrl?: string | undefined;
    brand?: Brand | undefined;
  };
  'owner-reauth': {
    username: string;
    /** In plain words, for someone who is not technical: "the account's password was changed". */
    cause: string;
    reconnectUrl: string;
    linkExpiresAt: Date;
    statusUrl?: string | undefined;
    brand?: Brand | undefined;
  };
  'owner-invitation': {
    connectUrl: string;
    linkExpiresAt: Date;
    username?: string | undefined;
    ownerName?: string | undefined;
    /** Whom the invitation is for: the address it is sent to. */
    ownerEmail?: string | undefined;
    brand?: Brand | undefined;
  };
  'operator-app': {
    /** feedmirror's name of the app the operator must fix. */
    app: string;
    /** What the platform did, after "The platform": "refuses the secret of app x". */
    cause: string;
    /** What to do, one sentence. */
    fix: string;
    /** How many accounts are connected through it. */
    accounts: number;
    dashboardUrl: string;
    brand?: Brand | undefined;
  };
}

export type EmailName = keyof EmailVars;
export const EMAIL_NAMES: readonly EmailName[] = [
  'operator-expiry',
  'operator-reauth',
  'owner-expiry',
  'owner-reauth',
  'owner-invitation',
  'operator-app',
];

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

const BRAND_NAMES = ['brand.name', 'brand.logoUrl', 'brand.supportEmail', 'brand.accentColor', 'brand.accentText'];
const OWNER_NOTIFIED = ['ownerNotified', 'ownerNotified.maskedEmail', 'ownerNotified.at'];

/** The names each template may use, and the link it must carry (an email without it is useless). */
const SPEC: Record<EmailName, { names: string[]; link: string }> = {
  'operator-expiry': {
    names: [
      'username',
      'accountId',
      'daysLeft',
      'daysLeftText',
      'expiresAt',
      'expiresOn',
      'reason',
      'dashboardUrl',
      ...OWNER_NOTIFIED,
    ],
    link: 'dashboardUrl',
  },
  'operator-reauth': {
    names: ['username', 'accountId', 'cause', 'expiresAt', 'expiresOn', 'dashboardUrl', ...OWNER_NOTIFIED],
    link: 'dashboardUrl',
  },
  'owner-expiry': {
    names: [
      'username',
      'daysLeft',
      'daysLeftText',
      'expiresAt',
      'expiresOn',
      'reconnectUrl',
      'linkExpiresAt',
      'statusUrl',
    ],
    link: 'reconnectUrl',
  },
  'owner-reauth': {
    names: ['username', 'cause', 'reconnectUrl', 'linkExpiresAt', 'statusUrl'],
    link: 'reconnectUrl',
  },
  'owner-invitation': {
    names: ['connectUrl', 'linkExpiresAt', 'username', 'ownerName', 'ownerEmail'],
    link: 'connectUrl',
  },
  'operator-app': {
    names: ['app', 'cause', 'fix', 'accounts', 'dashboardUrl'],
    link: 'dashboardUrl',
  },
};
const LAYOUT_NAMES = ['body', 'subject', ...BRAND_NAMES];

export const BUILT_IN_TEMPLATES_DIR = fileURLToPath(new URL('./email-templates/', import.meta.url));

interface Pair {
  subject: CompiledTemplate;
  text: CompiledTemplate;
  html: CompiledTemplate;
}

/** A checked set of templates: the built-in ones, with an operator's folder laid over them. */
export interface EmailTemplates {
  readonly layout: { text: CompiledTemplate; html: CompiledTemplate };
  readonly emails: Readonly<Record<EmailName, Pair>>;
  /** The override folder, when one is in use. */
  readonly dir?: string;
  /** The files the override folder replaced. */
  readonly overridden: readonly string[];
}

/** A template file that cannot be used; the message is one line naming the file. */
export class EmailTemplateError extends Error {
  override readonly name = 'EmailTemplateError';
}

let builtIn: EmailTemplates | undefined;

/** The templates shipped with feedmirror (read once). */
export function builtInEmailTemplates(): EmailTemplates {
  builtIn ??= loadEmailTemplates(undefined);
  return builtIn;
}

/**
 * The built-in templates with `dir`'s files laid over them. Every file of `dir` must be one of
 * layout.html, layout.txt, <name>.html, <name>.txt (dotfiles and README files are ignored) and
 * compile; otherwise (R-EML-2) an EmailTemplateError whose message is one line: the setting, the file,
 * the line and what is wrong. Called at start-up (preflight, doctor), never in the middle of an alert.
 */
export function loadEmailTemplates(dir: string | undefined): EmailTemplates {
  const files = new Map<string, string>();
  for (const f of readdirSync(BUILT_IN_TEMPLATES_DIR)) files.set(f, join(BUILT_IN_TEMPLATES_DIR, f));
  const overridden: string[] = [];
  let where: string | undefined;
  if (dir !== undefined) {
    where = resolve(dir);
    let entries: string[];
    try {
      if (!statSync(where).isDirectory()) throw new Error('not a folder');
      entries = readdirSync(where);
    } catch {
      throw new EmailTemplateError(`EMAIL_TEMPLATES_DIR: ${where} is not a readable folder`);
    }
    const allowed = new Set(['layout.html', 'layout.txt', ...EMAIL_NAMES.flatMap((n) => [`${n}.html`, `${n}.txt`])]);
    for (const f of entries.sort()) {
      if (f.startsWith('.') || /^readme/i.test(f)) continue;
      const path = join(where, f);
      if (!allowed.has(f))
        throw new EmailTemplateError(
          `EMAIL_TEMPLATES_DIR: ${path} is not a template feedmirror knows (expected layout.html, layout.txt or <name>.html/.txt with name one of ${EMAIL_NAMES.join(', ')})`,
        );
      files.set(f, path);
      overridden.push(f);
    }
  }
  const read = (f: string): { path: string; source: string } => {
    const path = files.get(f);
    if (!path) throw new EmailTemplateError(`email template ${f} is missing from ${BUILT_IN_TEMPLATES_DIR}`);
    try {
      return { path, source: readFileSync(path, 'utf8') };
    } catch (err) {
      throw new EmailTemplateError(
        `EMAIL_TEMPLATES_DIR: ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  };
  const compile = (f: string, mode: 'html' | 'text', names: string[], must: string[], source?: string) => {
    const file = read(f);
    const text = source ?? file.source;
    try {
      const t = compileTemplate(text, { mode, known: new Set(names) });
      for (const m of must)
        if (!t.names.has(m)) throw new EmailTemplateError(`${file.path} never uses {{${m}}}: the email would lack it`);
      return t;
    } catch (err) {
      if (err instanceof TemplateSyntaxError) throw new EmailTemplateError(`${file.path} ${err.message}`);
      throw err;
    }
  };
  const prefix = (e: unknown) => {
    if (
      e instanceof EmailTemplateError &&
      where &&
      e.message.startsWith(where) &&
      !e.message.startsWith('EMAIL_TEMPLATES_DIR')
    )
      return new EmailTemplateError(`EMAIL_TEMPLATES_DIR: ${e.message}`);
    return e;
  };
  try {
    const layout = {
      text: compile('layout.txt', 'text', LAYOUT_NAMES, ['body']),
      html: compile('layout.html', 'html', LAYOUT_NAMES, ['body']),
    };
    const emails = {} as Record<EmailName, Pair>;
    for (const name of EMAIL_NAMES) {
      const names = [...SPEC[name].names, ...BRAND_NAMES];
      const txt = read(`${name}.txt`);
      const m = /^\s*Subject:[ \t]*([^\n]*)\n/.exec(txt.source.replace(/\r\n/g, '\n'));
      if (!m || !m[1]!.trim())
        throw new EmailTemplateError(
          `${txt.path} line 1: must start with "Subject: ..." (the email's subject), then the body`,
        );
      const body = txt.source.replace(/\r\n/g, '\n').slice(m[0].length);
      // The body keeps its line numbers in errors: the subject line is blanked, not removed.
      emails[name] = {
        subject: compile(`${name}.txt`, 'text', names, [], m[1]),
        text: compile(`${name}.txt`, 'text', names, [SPEC[name].link], `\n${body}`),
        html: compile(`${name}.html`, 'html', names, [SPEC[name].link]),
      };
    }
    return { layout, emails, overridden, ...(where ? { dir: where } : {}) };
  } catch (err) {
    throw prefix(err);
  }
}

/** "Saturday, 21 February 2026, 15:00 UTC": unambiguous for any reader. */
export function humanDate(d: Date): string {
  const day = d.toLocaleDateString('en-GB', {
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  });
  const time = d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', hour12: false, timeZone: 'UTC' });
  return `${day}, ${time} UTC`;
}

function inDays(daysLeft: number): string {
  if (daysLeft < 1) return 'in less than a day';
  return `in ${daysLeft} day${daysLeft === 1 ? '' : 's'}`;
}

const isoDate = (d: Date) => d.toISOString().slice(0, 10);

function link(name: string, url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  let ok: boolean;
  try {
    ok = ['http:', 'https:'].includes(new URL(url).protocol);
  } catch {
    ok = false;
  }
  if (!ok) throw new Error(`email link ${name} must be an http(s) URL`);
  return url;
}

/**
 * A value as a reader sees it: a backtick means nothing to them and reads as code markup in some
 * mail clients, so it becomes a plain quote; line breaks become spaces (one value, one line).
 */
function plain(s: string | undefined): string | undefined {
  if (s === undefined) return undefined;
  return s.replace(/`/g, "'").replace(/\s*[\r\n]+\s*/g, ' ');
}

/** "the account password was changed." -> "the account password was changed" (the template adds the stop). */
const sentence = (s: string) =>
  plain(s)!
    .trim()
    .replace(/[.\s]+$/, '');

function scopeOf<N extends EmailName>(name: N, vars: EmailVars[N]): TemplateScope {
  const v = vars as EmailVars[EmailName] & Record<string, unknown>;
  const brand = resolveBrand(v.brand);
  const scope: TemplateScope = { brand: { ...brand } };
  const date = (d: unknown) => (d instanceof Date ? humanDate(d) : undefined);
  const on = (d: unknown) => (d instanceof Date ? isoDate(d) : undefined);
  switch (name) {
    case 'operator-expiry':
    case 'operator-reauth': {
      const o = vars as EmailVars['operator-expiry'] & EmailVars['operator-reauth'];
      Object.assign(scope, {
        username: plain(o.username),
        accountId: plain(o.accountId),
        dashboardUrl: link('dashboardUrl', o.dashboardUrl),
        expiresAt: date(o.expiresAt),
        expiresOn: on(o.expiresAt),
        ...(o.ownerNotified
          ? { ownerNotified: { maskedEmail: plain(o.ownerNotified.maskedEmail), at: humanDate(o.ownerNotified.at) } }
          : {}),
      });
      if (name === 'operator-expiry') {
        Object.assign(scope, { daysLeft: o.daysLeft, daysLeftText: inDays(o.daysLeft), reason: plain(o.reason) });
      } else {
        scope.cause = sentence(o.cause);
      }
      break;
    }
    case 'owner-expiry':
    case 'owner-reauth': {
      const o = vars as EmailVars['owner-expiry'] & EmailVars['owner-reauth'];
      Object.assign(scope, {
        username: plain(o.username),
        reconnectUrl: link('reconnectUrl', o.reconnectUrl),
        linkExpiresAt: date(o.linkExpiresAt),
        statusUrl: link('statusUrl', o.statusUrl),
      });
      if (name === 'owner-expiry') {
        Object.assign(scope, {
          daysLeft: o.daysLeft,
          daysLeftText: inDays(o.daysLeft),
          expiresAt: date(o.expiresAt),
          expiresOn: on(o.expiresAt),
        });
      } else {
        scope.cause = sentence(o.cause);
      }
      break;
    }
    case 'owner-invitation': {
      const o = vars as EmailVars['owner-invitation'];
      Object.assign(scope, {
        connectUrl: link('connectUrl', o.connectUrl),
        linkExpiresAt: date(o.linkExpiresAt),
        username: plain(o.username),
        ownerName: plain(o.ownerName),
        ownerEmail: plain(o.ownerEmail),
      });
      break;
    }
    case 'operator-app': {
      const o = vars as EmailVars['operator-app'];
      Object.assign(scope, {
        app: plain(o.app),
        cause: plain(o.cause),
        fix: plain(o.fix),
        accounts: o.accounts,
        dashboardUrl: link('dashboardUrl', o.dashboardUrl),
      });
      break;
    }
  }
  return scope;
}

/** Plain text as mail clients show it best: no trailing blanks, at most one empty line in a row. */
function tidyText(s: string): string {
  return `${s
    .replace(/[ \t]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim()}\n`;
}

export function renderEmail<N extends EmailName>(
  name: N,
  vars: EmailVars[N],
  templates: EmailTemplates = builtInEmailTemplates(),
): RenderedEmail {
  const t = templates.emails[name];
  const scope = scopeOf(name, vars);
  const subject = t.subject.render(scope).replace(/\s+/g, ' ').trim();
  const layoutScope = { ...scope, subject };
  const text = templates.layout.text.render({ ...layoutScope, body: tidyText(t.text.render(scope)).trimEnd() });
  const html = templates.layout.html.render({ ...layoutScope, body: safeHtml(t.html.render(scope).trim()) });
  return { subject, text: tidyText(text), html };
}
