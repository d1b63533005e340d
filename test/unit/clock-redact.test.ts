import { describe, expect, it } from 'vitest';
import { ManualClock, DAY } from '../../src/util/clock.ts';
import { redactText, redactTextKeeping, redactUrl, redactValue, registerSecret } from '../../src/util/redact.ts';

describe('ManualClock', () => {
  it('moves only forward, when told', () => {
    const c = new ManualClock(Date.UTC(2026, 0, 1));
    c.advance(DAY);
    expect(c.now().toISOString()).toBe('2026-01-02T00:00:00.000Z');
    expect(() => c.advance(-1)).toThrow(/forward/);
  });
});

describe('redaction (R-TOK-11, R-LNK-7, R-MED-6)', () => {
  it('drops query strings from URLs in free text', () => {
    const s = redactText('GET https://graph.example/v25.0/me/media?access_token=IGQVJabc&after=x failed');
    expect(s).not.toContain('IGQVJabc');
    expect(s).toContain('https://graph.example/v25.0/me/media?…');
  });
  it('scrubs secret parameters outside URLs and registered secrets', () => {
    registerSecret('super-secret-app-value');
    const s = redactText('client_secret=abc123 access_token=tok456 and super-secret-app-value');
    expect(s).not.toMatch(/abc123|tok456|super-secret-app-value/);
    expect(redactUrl('https://a/b?c=d#e')).toBe('https://a/b?…');
  });
  it('scrubs a credential after Bearer, and leaves the word "token" in prose alone', () => {
    expect(redactText('Authorization: Bearer IGQVJ1a2b3c4d')).toBe('Authorization: Bearer [redacted]');
    expect(redactText('bearer abcdefghijklmnopqrstuv')).toBe('bearer [redacted]');
    expect(redactText('Bearer eyJhbGciOi.x-y_z')).toBe('Bearer [redacted]');
    const hint = 'set METRICS_TOKEN and give it to Prometheus as a bearer token';
    expect(redactText(hint)).toBe(hint);
  });
  it('keeps whole only the links an email declares it carries, and never one holding a secret (R-TOK-11)', () => {
    const invite = 'https://feeds.example/connect?invite=AbC_dEf-123';
    const text = `Connect: ${invite}\n<a href="${invite}">x</a> other https://graph.example/me?access_token=IGQVJabc`;
    const kept = redactTextKeeping(text, [invite]);
    expect(kept).toBe(`Connect: ${invite}\n<a href="${invite}">x</a> other https://graph.example/me?…`);
    // HTML-escaped as a template writes it into an attribute.
    const amp = 'https://feeds.example/connect?invite=x&lang=en';
    expect(redactTextKeeping(`<a href="https://feeds.example/connect?invite=x&amp;lang=en">`, [amp])).toContain(
      'invite=x&amp;lang=en',
    );
    // A declared link with a secret parameter, a bearer credential or a registered secret is redacted like any other.
    registerSecret('registered-secret-value');
    for (const bad of [
      'https://graph.example/me?access_token=IGQVJabc',
      'https://feeds.example/x?code=abc123',
      'https://feeds.example/registered-secret-value',
      'javascript:alert(1)',
    ]) {
      const out = redactTextKeeping(`see ${bad}`, [bad]);
      expect(out).not.toContain('IGQVJabc');
      expect(out).not.toContain('abc123');
      expect(out).not.toContain('registered-secret-value');
      expect(out).toBe(redactText(`see ${bad}`));
    }
    expect(redactTextKeeping(text, [])).toBe(redactText(text));
  });
  it('replaces secret-named keys in objects', () => {
    expect(redactValue({ accessToken: 'x', nested: { token: 'y', ok: 1 } })).toEqual({
      accessToken: '[redacted]',
      nested: { token: '[redacted]', ok: 1 },
    });
  });
});
