import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailer, smtpOptions } from '../../src/alerts/mailer.ts';
import { main } from '../../src/cli/main.ts';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { whereJsonStops } from '../../src/util/json-position.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { memoryIO } from '../support/memory-io.ts';
import { nonLoopbackAddress } from './support.ts';

/**
 * Item 7. On main before this issue: SMTP credentials went out in clear text to a
 * server that offered no STARTTLS; `feedmirror validate <file>` quoted the first bytes of a file
 * that was not JSON (a token file, /etc/shadow); `accounts add` read 30 MB from standard input
 * and sent that "token" to the platform in a URL (the 8 KB cap belongs to `accounts add`; this checks it
 * holds).
 */
const dir = mkdtempSync(path.join(tmpdir(), 'feedmirror-leaks-'));
const SMTP_PASSWORD = 'smtp-password-never-in-clear';
registerSecretForAudit(SMTP_PASSWORD);

interface SmtpUnderTest {
  server: SMTPServer;
  port: number;
  auths: string[];
  messages: number;
}

async function smtpServer(opts: { secure: boolean; key?: Buffer; cert?: Buffer }): Promise<SmtpUnderTest> {
  const t: SmtpUnderTest = { server: undefined as unknown as SMTPServer, port: 0, auths: [], messages: 0 };
  t.server = new SMTPServer({
    secure: opts.secure,
    ...(opts.key ? { key: opts.key, cert: opts.cert } : {}),
    // A server that offers no STARTTLS and still accepts AUTH (a misconfigured or hostile relay).
    disabledCommands: opts.secure ? [] : ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      t.auths.push(auth.username ?? '');
      cb(null, { user: auth.username });
    },
    onData(stream, _session, cb) {
      stream.resume();
      stream.on('end', () => {
        t.messages++;
        cb();
      });
    },
  });
  await new Promise<void>((r) => t.server.listen(0, nonLoopbackAddress(), r));
  t.port = (t.server.server.address() as AddressInfo).port;
  return t;
}

describe('SMTP never sends credentials without TLS', () => {
  let plain: SmtpUnderTest;
  let tls: SmtpUnderTest;
  let cert: Buffer;

  beforeAll(async () => {
    // A certificate of our own for the smtps:// server (smtp-server's bundled one has expired).
    const host = nonLoopbackAddress();
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${host}`,
        '-addext',
        `subjectAltName=IP:${host}`,
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(path.join(dir, 'cert.pem'));
    plain = await smtpServer({ secure: false });
    tls = await smtpServer({ secure: true, key: readFileSync(path.join(dir, 'key.pem')), cert });
  });

  afterAll(async () => {
    await new Promise<void>((r) => plain?.server.close(() => r()));
    await new Promise<void>((r) => tls?.server.close(() => r()));
  });

  it('smtp:// to a server without STARTTLS: refused before AUTH, nothing sent', async () => {
    const mailer = createMailer(
      {
        SMTP_URL: `smtp://alerts:${SMTP_PASSWORD}@${nonLoopbackAddress()}:${plain.port}`,
        ALERT_EMAIL_TO: 'ops@example.test',
        ALERT_EMAIL_FROM: 'feedmirror@example.test',
        OUTBOX_DIR: dir,
      },
      silentLogger,
    );
    const err = await mailer.send({ subject: 'test', text: 'body', html: '<p>body</p>' }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    mailer.close();
    expect(err).not.toBeNull();
    expect(err!.message).not.toContain(SMTP_PASSWORD);
    expect(plain.auths).toEqual([]);
    expect(plain.messages).toBe(0);
  });

  it('the options say so: STARTTLS required for smtp:// off this machine, TLS from the start for smtps://', () => {
    expect(smtpOptions('smtp://u:p@mail.example:587')).toMatchObject({
      secure: false,
      requireTLS: true,
      ignoreTLS: false,
    });
    expect(smtpOptions('smtps://u:p@mail.example')).toMatchObject({ secure: true, port: 465 });
    expect(smtpOptions('smtp://127.0.0.1:25')).toMatchObject({ requireTLS: false, ignoreTLS: true }); // never leaves the machine
  });

  it('smtps:// works: the mail and the credentials go over TLS', async () => {
    const transport = nodemailer.createTransport({
      ...smtpOptions(`smtps://alerts:${SMTP_PASSWORD}@${nonLoopbackAddress()}:${tls.port}`),
      tls: { ca: [cert] },
    });
    await transport.sendMail({
      from: 'feedmirror@example.test',
      to: 'ops@example.test',
      subject: 'over TLS',
      text: 'ok',
    });
    transport.close();
    expect(tls.auths).toEqual(['alerts']);
    expect(tls.messages).toBe(1);
  });
});

describe('validate says where a file stops being JSON, never what is in it', () => {
  const shadow = 'root:$6$saltsalt$c2VjcmV0LWhhc2gtdmFsdWU:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n';
  const tokenFile = 'IGQVJtoken-that-must-not-be-printed-0123456789\n';
  const partial = '{"schemaVersion": 1,\n  "source": secret-value-here\n}';

  it.each([
    ['an /etc/shadow-like file', shadow, 'line 1, column 1', ['root', 'salt', 'c2VjcmV0']],
    ['a token file', tokenFile, 'line 1, column 1', ['IGQVJ', 'token-that']],
    ['JSON that breaks on line 2', partial, 'line 2, column 13', ['secret-value']],
    ['JSON cut short', '{"posts": [1, 2', 'the text ends before the JSON does', ['posts']],
  ])('%s', async (_name, content, where, never) => {
    const file = path.join(dir, `f-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, content);
    const io = memoryIO({ env: {} });
    expect(await main(['validate', file], io)).toBe(2);
    expect(io.err()).toContain(where);
    for (const n of never) expect(io.err()).not.toContain(n);
  });

  it('the scanner agrees with JSON.parse on what is JSON', () => {
    for (const ok of ['{}', '[]', '1', '"a\\u00e9"', '{"a":[true,false,null,-1.5e3]}', ' \n{"a" : {"b": []}} ']) {
      JSON.parse(ok);
      expect(whereJsonStops(ok).reason, ok).toBe('end');
      expect(whereJsonStops(ok).offset, ok).toBe(ok.length);
    }
    expect(whereJsonStops('[1,]')).toMatchObject({ offset: 3, reason: 'character' });
    expect(whereJsonStops('{"a":01}')).toMatchObject({ offset: 6 });
  });
});

describe('accounts add caps standard input (8 KB; the cap must hold)', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator();
  });
  afterAll(async () => {
    await sim?.close();
  });

  it('30 MB on stdin is refused at once; the platform is never called with it', async () => {
    const before = sim.requests.length;
    const io = memoryIO({
      env: {
        GRAPH_URL: sim.graphUrl,
        OAUTH_TOKEN_URL: sim.oauthTokenUrl,
        TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
        DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
      },
      stdin: 'A'.repeat(30 * 1024 * 1024),
    });
    const code = await main(['accounts', 'add'], io);
    expect(code).not.toBe(0);
    expect(io.err()).toMatch(/standard input is larger than 8192 bytes/);
    expect(io.err().length).toBeLessThan(200);
    expect(sim.requests.length).toBe(before);
  });
});
