import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { recordCaptured } from './capture.ts';

/**
 * A real SMTP server in-process that keeps what it receives. STARTTLS is disabled because
 * smtp-server's bundled certificate has expired; clients use ignoreTLS.
 * mailparser is not installed, so messages are parsed minimally: headers, and the text/plain part
 * (quoted-printable or base64) of a simple or multipart message.
 */

export interface CapturedMessage {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  raw: string;
}

export interface SmtpCapture {
  url: string;
  messages: CapturedMessage[];
  /** Make the next n messages fail with a 451 (temporary failure), to test retries; 0 resets. */
  failNext(n?: number): void;
  close(): Promise<void>;
}

export async function startSmtpCapture(): Promise<SmtpCapture> {
  const messages: CapturedMessage[] = [];
  let failures = 0;
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (failures > 0) {
          failures--;
          const err = Object.assign(new Error('try again later'), { responseCode: 451 });
          callback(err);
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const parsed = parseMessage(raw);
        // Every email the suite sends is kept for the secrets audit (test/audit).
        recordCaptured('email', `${raw}\n${parsed.text}\n${parsed.html}`);
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          subject: decodeWords(parsed.headers.get('subject') ?? ''),
          text: parsed.text,
          html: parsed.html,
          raw,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    failNext: (n = 1) => {
      failures = n;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface Part {
  headers: Map<string, string>;
  body: string;
}

function splitPart(raw: string): Part {
  const norm = raw.replace(/\r\n/g, '\n');
  const cut = norm.indexOf('\n\n');
  const head = cut === -1 ? norm : norm.slice(0, cut);
  const body = cut === -1 ? '' : norm.slice(cut + 2);
  const headers = new Map<string, string>();
  // Unfold continuation lines, then one header per line.
  for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return { headers, body };
}

function decodeBody(p: Part): string {
  const enc = (p.headers.get('content-transfer-encoding') ?? '7bit').toLowerCase();
  if (enc === 'base64') return Buffer.from(p.body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (enc === 'quoted-printable') {
    const src = p.body.replace(/=\n/g, '');
    const bytes: number[] = [];
    for (let i = 0; i < src.length; i++) {
      const hex = src[i] === '=' ? /^[0-9A-F]{2}$/i.exec(src.slice(i + 1, i + 3)) : null;
      if (hex) {
        bytes.push(parseInt(hex[0], 16));
        i += 2;
      } else {
        bytes.push(...Buffer.from(src[i]!, 'utf8'));
      }
    }
    return Buffer.from(bytes).toString('utf8');
  }
  return p.body;
}

/** A MIME message's headers and its text and HTML parts (an .eml file from the outbox, too). */
export function parseMessage(raw: string): { headers: Map<string, string>; text: string; html: string } {
  const top = splitPart(raw);
  let text = '';
  let html = '';
  const visit = (p: Part) => {
    const type = (p.headers.get('content-type') ?? 'text/plain').toLowerCase();
    const boundary = /boundary="?([^";]+)"?/i.exec(p.headers.get('content-type') ?? '')?.[1];
    if (type.startsWith('multipart/') && boundary) {
      const pieces = p.body.split(`--${boundary}`).slice(1);
      for (const piece of pieces) {
        if (piece.startsWith('--')) break;
        visit(splitPart(piece.replace(/^\n/, '')));
      }
    } else if (type.startsWith('text/html')) {
      html ||= decodeBody(p);
    } else if (type.startsWith('text/plain')) {
      text ||= decodeBody(p);
    }
  };
  visit(top);
  return { headers: top.headers, text, html };
}

/** RFC 2047 encoded words (=?UTF-8?Q?...?= / =?UTF-8?B?...?=), as nodemailer writes them. */
function decodeWords(s: string): string {
  return s
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([QB])\?([^?]*)\?=/gi, (_m, _cs: string, enc: string, data: string) => {
      if (enc.toUpperCase() === 'B') return Buffer.from(data, 'base64').toString('utf8');
      const bytes = Buffer.from(
        data.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (_x, h: string) => String.fromCharCode(parseInt(h, 16))),
        'latin1',
      );
      return bytes.toString('utf8');
    });
}
