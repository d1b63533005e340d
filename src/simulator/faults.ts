import { html } from '../util/html.ts';
import { graphError, htmlPage, json, type Reply } from './reply.ts';
import type { FaultSpec } from './types.ts';

/**
 * Injected failures. A fault matches on `path` (a string matches when the pathname ends with it,
 * a RegExp is tested on the pathname) and/or `match`; the first matching fault fires, `times`
 * times, then is gone.
 */

export interface RequestInfo {
  host: string;
  path: string;
  query: Record<string, string>;
}

export type FaultAction =
  | { kind: 'reply'; reply: Reply }
  | { kind: 'timeout' }
  | { kind: 'reset' }
  | { kind: 'huge'; status: number; sizeBytes: number };

const RATE_LIMIT_MESSAGES: Record<number, string> = {
  4: '(#4) Application request limit reached',
  17: '(#17) User request limit reached',
  32: '(#32) Page request limit reached',
  613: '(#613) Calls to this api have exceeded the rate limit.',
};

/** The platform's answer to a call over a limit (R-OWN-1): code 4 (the app) or 17 (the user). */
export function rateLimitReply(code: number, headers: Record<string, string>, status = 400): Reply {
  const reply = graphError(status, code, RATE_LIMIT_MESSAGES[code] ?? `(#${code}) Rate limit reached`, {
    transient: true,
  });
  reply.headers = { ...reply.headers, ...headers };
  return reply;
}

export class FaultList {
  private faults: Array<FaultSpec & { left: number }> = [];

  add(f: FaultSpec): void {
    const times = f.times ?? 1;
    if (!(times > 0)) throw new Error('simulator: a fault needs times > 0');
    if (f.path === undefined && f.match === undefined) throw new Error('simulator: a fault needs path or match');
    this.faults.push({ ...f, left: times });
  }

  clear(): void {
    this.faults = [];
  }

  get size(): number {
    return this.faults.length;
  }

  /** The fault this request meets, counted as fired; undefined when none. */
  take(r: RequestInfo): FaultSpec | undefined {
    const i = this.faults.findIndex((f) => matches(f, r));
    if (i === -1) return undefined;
    const f = this.faults[i] as FaultSpec & { left: number };
    f.left -= 1;
    if (f.left <= 0) this.faults.splice(i, 1);
    return f;
  }
}

function matches(f: FaultSpec, r: RequestInfo): boolean {
  if (f.path !== undefined) {
    const ok = typeof f.path === 'string' ? r.path.endsWith(f.path) : f.path.test(r.path);
    if (!ok) return false;
  }
  return f.match ? f.match({ host: r.host, path: r.path, query: { ...r.query } }) : true;
}

/** What a fired fault does; `usage` builds the rate-limit headers. */
export function faultAction(f: FaultSpec, usage: (regainMinutes: number) => Record<string, string>): FaultAction {
  switch (f.kind) {
    case 'timeout':
    case 'answered-unsent': // handled before this: the request is served, then held
      return { kind: 'timeout' };
    case 'reset':
      return { kind: 'reset' };
    case 'huge':
      return { kind: 'huge', status: f.status ?? 200, sizeBytes: f.sizeBytes ?? 50 * 1024 * 1024 };
    case 'status': {
      const status = f.status ?? 500;
      return {
        kind: 'reply',
        reply: json(status, { error: { message: f.message ?? `Simulated HTTP ${status}`, type: 'SimulatedFault' } }),
      };
    }
    case 'rate-limit': {
      const code = f.code ?? 4;
      const reply = graphError(
        f.status ?? 429,
        code,
        f.message ?? RATE_LIMIT_MESSAGES[code] ?? `(#${code}) Rate limit reached`,
        {
          subcode: f.subcode,
          transient: true,
        },
      );
      reply.headers = { ...reply.headers, ...usage(f.regainMinutes ?? 1) };
      return { kind: 'reply', reply };
    }
    case 'json':
      // A well-formed answer with the wrong content: by default an empty page without paging,
      // which looks exactly like an account with no posts.
      return { kind: 'reply', reply: json(f.status ?? 200, f.body ?? { data: [] }) };
    case 'malformed-json':
      return {
        kind: 'reply',
        reply: {
          status: f.status ?? 200,
          headers: { 'content-type': 'application/json; charset=UTF-8' },
          body: '{"data":[{"id":"1790000000000000","media_type":"IMA',
        },
      };
    case 'html':
      return {
        kind: 'reply',
        reply: htmlPage(
          f.status ?? 502,
          'Error',
          html`<h1>${f.status ?? 502} Bad Gateway</h1><p>${f.message ?? 'Sorry, something went wrong.'}</p>`,
        ),
      };
    case 'error': {
      const code = f.code ?? 2;
      const message =
        f.message ??
        (code === 1
          ? 'An unknown error occurred'
          : code === 2
            ? 'An unexpected error has occurred. Please retry your request later.'
            : `Simulated error ${code}`);
      return {
        kind: 'reply',
        reply: graphError(f.status ?? 400, code, message, { subcode: f.subcode, transient: code === 1 || code === 2 }),
      };
    }
  }
}
