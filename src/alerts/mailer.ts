import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { Config } from '../config.ts';
import { systemClock, type Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { redactText, redactTextKeeping, redactUrl } from '../util/redact.ts';
import { maskEmail } from '../accounts/owner-contact.ts';

export interface MailMessage {
  subject: string;
  text: string;
  html?: string;
  /** Another recipient than ALERT_EMAIL_TO (an account's owner); logged masked. */
  to?: string;
  /**
   * Links the message exists to carry, kept verbatim by the last guard although their query
   * string would be cut (an invitation's `/connect?invite=…`); never one with a secret parameter.
   */
  links?: readonly string[];
}

export interface SendResult {
  delivered: 'smtp' | 'outbox';
  /** The .eml file, in outbox mode. */
  path?: string;
}

export interface Mailer {
  send(msg: MailMessage): Promise<SendResult>;
  close(): void;
}

export type MailerConfig = Pick<Config, 'SMTP_URL' | 'ALERT_EMAIL_TO' | 'ALERT_EMAIL_FROM' | 'OUTBOX_DIR'>;

/** Where outbox mail goes when no ALERT_EMAIL_TO is set. */
const OUTBOX_DEFAULT_TO = 'operator@localhost';

export class MailerConfigError extends Error {
  override readonly name = 'MailerConfigError';
}

/** nodemailer options from SMTP_URL; credentials come from the URL's user info. */
export function smtpOptions(smtpUrl: string): SMTPTransport.Options {
  const u = new URL(smtpUrl);
  const secure = u.protocol === 'smtps:';
  const loopback = ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(u.hostname);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    // smtp:// to another machine must upgrade with STARTTLS before anything (credentials, the
    // alert's text) is sent: nodemailer refuses a server that does not offer it, instead of
    // falling back to clear text. smtps:// is TLS from the first byte. A relay on this machine
    // over loopback never leaves it, so it needs no TLS (and test servers offer a stale cert).
    requireTLS: !secure && !loopback,
    ignoreTLS: !secure && loopback,
    auth: u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : undefined,
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 30_000,
  };
}

/**
 * The operator's mail. With SMTP_URL: SMTP to ALERT_EMAIL_TO. Without (the embedded default):
 * each message becomes an .eml file in OUTBOX_DIR, logged by path, so a fresh install loses no
 * alert and needs no mail server.
 */
export function createMailer(config: MailerConfig, logger: Logger, opts: { clock?: Clock } = {}): Mailer {
  const clock = opts.clock ?? systemClock;
  const from = config.ALERT_EMAIL_FROM;
  if (config.SMTP_URL) {
    if (!config.ALERT_EMAIL_TO)
      throw new MailerConfigError('SMTP_URL is set but ALERT_EMAIL_TO is not: set the address that receives alerts');
    const to = config.ALERT_EMAIL_TO;
    const transport = nodemailer.createTransport(smtpOptions(config.SMTP_URL));
    const where = redactSmtpUrl(config.SMTP_URL);
    return {
      async send(msg) {
        const clean = guard(msg);
        const rcpt = msg.to ?? to;
        try {
          await transport.sendMail({ from, to: rcpt, ...clean });
        } catch (err) {
          // nodemailer errors may echo the server's reply; never the URL's password.
          throw new Error(`sending email through ${where} failed: ${redactText((err as Error).message)}`, {
            cause: err,
          });
        }
        logger.info({ to: logged(msg.to, to), subject: clean.subject, via: where }, 'alert email sent');
        return { delivered: 'smtp' };
      },
      close: () => transport.close(),
    };
  }
  const dir = resolve(config.OUTBOX_DIR);
  const to = config.ALERT_EMAIL_TO ?? OUTBOX_DEFAULT_TO;
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(msg) {
      const clean = guard(msg);
      const info = await transport.sendMail({ from, to: msg.to ?? to, ...clean });
      await mkdir(dir, { recursive: true });
      const stamp = clock.now().toISOString().replace(/[:.]/g, '-');
      const path = join(dir, `${stamp}-${randomUUID().slice(0, 8)}.eml`);
      // Write then rename, so whoever watches the folder never reads half a message.
      await writeFile(`${path}.tmp`, info.message as Buffer);
      await rename(`${path}.tmp`, path);
      logger.info(
        { to: logged(msg.to, to), subject: clean.subject, path },
        'alert email written to the outbox (no SMTP_URL set)',
      );
      return { delivered: 'outbox', path };
    },
    close: () => transport.close(),
  };
}

/** The operator's address as is; an owner's masked (j***@example.com): logs need no client's address. */
function logged(owner: string | undefined, operator: string): string {
  return owner === undefined ? operator : maskEmail(owner);
}

/**
 * Last guard before anything leaves: redact subject and bodies (R-TOK-11), keeping only the links
 * the message declares it carries (redactTextKeeping refuses any with a secret in it).
 */
function guard(msg: MailMessage): Omit<MailMessage, 'to' | 'links'> {
  const links = msg.links ?? [];
  return {
    subject: redactText(msg.subject),
    text: redactTextKeeping(msg.text, links),
    ...(msg.html !== undefined ? { html: redactTextKeeping(msg.html, links) } : {}),
  };
}

function redactSmtpUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.username ? `${decodeURIComponent(u.username)}@` : ''}${u.host}`;
  } catch {
    return redactUrl(url);
  }
}
