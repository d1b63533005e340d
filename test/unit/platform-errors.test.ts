import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  describeZodError,
  extractErrorInfo,
  mapPlatformError,
  type Operation,
} from '../../src/platform/error-mapping.ts';
import {
  InsufficientDeveloperRoleError,
  MalformedResponseError,
  PasswordChangedError,
  PlatformRequestError,
  RateLimitedError,
  TokenExpiredError,
  TokenInvalidError,
  TokenTooYoungError,
  TransientError,
} from '../../src/platform/errors.ts';
import { parseUsage, retryAfterMs } from '../../src/platform/rate-limit.ts';
import { backoffMs } from '../../src/platform/http.ts';

const now = new Date('2026-01-01T00:00:00Z');
const TOKEN = 'IGAAsecretTOKENvalue123';
function response(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  operation: Operation = 'media list',
) {
  return mapPlatformError(
    { kind: 'response', status, body, headers: new Headers(headers) },
    { operation, now, secrets: [TOKEN] },
  );
}
const graphError = (code: number, subcode?: number, message = 'Error validating access token') => ({
  error: { message, type: 'OAuthException', code, error_subcode: subcode, fbtrace_id: 'x' },
});

describe('mapPlatformError: tokens (R-TOK-3, R-TOK-10, R-OWN-4)', () => {
  it('R-TOK-10 190/463 => TokenExpiredError carrying status, code, subcode', () => {
    const e = response(400, graphError(190, 463));
    expect(e).toBeInstanceOf(TokenExpiredError);
    expect(e).toBeInstanceOf(TokenInvalidError);
    expect([e.status, e.code, e.subcode, e.operation]).toEqual([400, 190, 463, 'media list']);
    expect(e.message).toMatch(/log in again/);
  });
  it('R-TOK-10 190/460 => PasswordChangedError', () => {
    expect(response(400, graphError(190, 460))).toBeInstanceOf(PasswordChangedError);
  });
  it('R-OWN-4 any other 190 subcode, or none, => TokenInvalidError', () => {
    for (const sub of [458, 459, 467, 999, undefined]) {
      const e = response(400, graphError(190, sub));
      expect(e.constructor).toBe(TokenInvalidError);
      expect(e.subcode).toBe(sub);
    }
  });
  it('R-TOK-3 error codes given as strings are still read', () => {
    const e = response(400, { error: { code: '190', error_subcode: '463', message: 'expired' } });
    expect(e).toBeInstanceOf(TokenExpiredError);
  });
  it('R-TOK-3 the login endpoint error shape {error_type, code, error_message} is read', () => {
    const e = response(
      400,
      { error_type: 'OAuthException', code: 400, error_message: 'Matching code was not found or was already used' },
      {},
      'code exchange',
    );
    expect(e).toBeInstanceOf(PlatformRequestError);
    expect(e.code).toBe(400);
    expect(e.platformMessage).toMatch(/already used/);
  });
  it('R-TOK-14 insufficient developer role => its own error telling the owner to accept the tester role', () => {
    const e = response(400, {
      error: { code: 10, message: 'Application does not have permission: Insufficient Developer Role' },
    });
    expect(e).toBeInstanceOf(InsufficientDeveloperRoleError);
    expect(e.message).toMatch(/tester/);
    expect(e.message).toMatch(/account settings/);
  });
  it('R-TOK-5 a refresh refused for a token younger than 24 hours => TokenTooYoungError', () => {
    const e = response(
      400,
      graphError(100, undefined, 'The token must be at least 24 hours old to be refreshed'),
      {},
      'token refresh',
    );
    expect(e).toBeInstanceOf(TokenTooYoungError);
    // the same words on another operation are not about token age
    expect(response(400, graphError(100, undefined, 'at least 24 hours'), {}, 'media list')).toBeInstanceOf(
      PlatformRequestError,
    );
  });
});

describe('mapPlatformError: rate limits (R-OWN-1)', () => {
  it('R-OWN-1 HTTP 429 => RateLimitedError with Retry-After', () => {
    const e = response(429, undefined, { 'retry-after': '120' });
    expect(e).toBeInstanceOf(RateLimitedError);
    expect((e as RateLimitedError).retryAfterMs).toBe(120_000);
  });
  it.each([4, 17, 32, 613])('R-OWN-1 code %i => RateLimitedError', (code) => {
    expect(response(400, graphError(code, undefined, 'Application request limit reached'))).toBeInstanceOf(
      RateLimitedError,
    );
  });
  it('R-OWN-1 retryAfterMs from X-Business-Use-Case-Usage estimated_time_to_regain_access (minutes), with the usage', () => {
    const buc = JSON.stringify({
      '1784': [
        { type: 'instagram', call_count: 100, total_cputime: 12, total_time: 30, estimated_time_to_regain_access: 7 },
      ],
    });
    const e = response(400, graphError(4), {
      'x-business-use-case-usage': buc,
      'retry-after': '5',
    }) as RateLimitedError;
    expect(e.retryAfterMs).toBe(7 * 60_000);
    expect(e.usage?.maxPercent).toBe(100);
  });
  it('parseUsage ignores malformed headers and takes the highest figure', () => {
    expect(parseUsage(new Headers({ 'x-app-usage': 'not json' }), now)).toBeUndefined();
    const u = parseUsage(new Headers({ 'x-app-usage': '{"call_count":85,"total_time":10,"total_cputime":3}' }), now);
    expect(u?.maxPercent).toBe(85);
    expect(
      retryAfterMs(new Headers({ 'retry-after': new Date(now.getTime() + 30_000).toUTCString() }), undefined, now),
    ).toBe(30_000);
    expect(retryAfterMs(new Headers({}), undefined, now)).toBeUndefined();
  });
});

describe('mapPlatformError: transient, malformed, other', () => {
  it('5xx (even an HTML page) => TransientError', () => {
    expect(response(502, undefined)).toBeInstanceOf(TransientError);
    expect(response(500, graphError(2, undefined, 'Service temporarily unavailable'))).toBeInstanceOf(TransientError);
  });
  it('timeouts and connection resets => TransientError, without the fetch error', () => {
    const timeout = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    const t = mapPlatformError(
      { kind: 'transport', error: timeout, timeoutMs: 1500 },
      { operation: 'profile', now, secrets: [] },
    );
    expect(t).toBeInstanceOf(TransientError);
    expect(t.message).toMatch(/1500 ms/);
    const reset = new TypeError('fetch failed', {
      cause: { code: 'ECONNRESET', message: `https://graph/x?access_token=${TOKEN}` },
    });
    const r = mapPlatformError(
      { kind: 'transport', error: reset, timeoutMs: 1 },
      { operation: 'profile', now, secrets: [] },
    );
    expect(r).toBeInstanceOf(TransientError);
    expect(r.message).toMatch(/ECONNRESET/);
    expect(r.cause).toBeUndefined();
    expect(JSON.stringify({ m: r.message, s: r.stack })).not.toContain(TOKEN);
  });
  it('malformed => MalformedResponseError naming the operation', () => {
    const e = mapPlatformError(
      { kind: 'malformed', status: 200, detail: 'data[3].like_count: expected number' },
      { operation: 'media list', now, secrets: [] },
    );
    expect(e).toBeInstanceOf(MalformedResponseError);
    expect(e.message).toMatch(/^media list: .*data\[3\]\.like_count: expected number/);
  });
  it('anything else => PlatformRequestError; the platform message is scrubbed of the call secrets', () => {
    const e = response(
      400,
      graphError(100, undefined, `Invalid parameter near ${TOKEN} in https://graph.example/me?access_token=${TOKEN}`),
    );
    expect(e).toBeInstanceOf(PlatformRequestError);
    expect(e.message).not.toContain(TOKEN);
    expect(e.platformMessage).not.toContain(TOKEN);
    expect(e.message).not.toContain('access_token=');
  });
  it('extractErrorInfo: no error in a success body', () => {
    expect(extractErrorInfo({ data: [] })).toBeUndefined();
    expect(extractErrorInfo({ error: 'invalid_request', error_description: 'bad code' })?.message).toBe('bad code');
  });
});

describe('describeZodError', () => {
  it('names the field path and the expected type, never the value', () => {
    const schema = z.object({ data: z.array(z.object({ like_count: z.number().optional() })) });
    const r = schema.safeParse({ data: [{}, {}, {}, { like_count: 'SECRETVALUE' }] });
    expect(r.success).toBe(false);
    const text = describeZodError(r.error!);
    expect(text).toContain('data[3].like_count: expected number');
    expect(text).not.toContain('SECRETVALUE');
  });
});

describe('backoff', () => {
  it('full jitter: uniform below an exponentially growing, capped ceiling', () => {
    expect(backoffMs(0, () => 0.999)).toBe(499);
    expect(backoffMs(3, () => 0.5)).toBe(2000);
    expect(backoffMs(20, () => 0.5)).toBe(10_000);
    expect(backoffMs(2, () => 0)).toBe(0);
  });
});
