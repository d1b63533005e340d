import { describe, expect, it } from 'vitest';
import { webhookBackoff, webhookDeliveryOptions, WEBHOOK_RETRY_DELAYS_MS } from '../../jobs/webhook-delivery.ts';
import { feedChanges } from '../../src/feeds/publish.ts';
import { checkEndpointUrl, isPublicAddress } from '../../src/webhooks/address.ts';
import { parseEventList } from '../../src/webhooks/endpoints.ts';
import { signatureHeader, verifySignature } from '../../src/webhooks/signature.ts';

describe('webhooks (pure parts)', () => {
  it('retries: ten attempts, the last about 24 hours after the first; the schedule only applies to the webhook backoff type', () => {
    expect(webhookDeliveryOptions.attempts).toBe(10);
    const backoff = webhookBackoff();
    const delays = Array.from({ length: 9 }, (_, i) => backoff(i + 1, 'webhook'));
    expect(delays).toEqual([...WEBHOOK_RETRY_DELAYS_MS]);
    const total = delays.reduce((a, b) => a + b, 0) / 3_600_000;
    expect(total).toBeGreaterThan(23);
    expect(total).toBeLessThanOrEqual(24);
    // Delays never shrink.
    for (let i = 1; i < delays.length; i++) expect(delays[i]!).toBeGreaterThanOrEqual(delays[i - 1]!);
    expect(backoff(1, 'exponential')).toBe(0);
  });

  it('signature header: t and one v1 per secret; verification needs the exact body and a secret that signed it', () => {
    const at = new Date('2026-03-01T10:00:00Z');
    const header = signatureHeader(['whsec_a', 'whsec_b'], '{"x":1}', at);
    expect(header).toMatch(/^t=1772359200,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifySignature('whsec_a', header, '{"x":1}', at).ok).toBe(true);
    expect(verifySignature('whsec_b', header, '{"x":1}', at).ok).toBe(true);
    expect(verifySignature('whsec_c', header, '{"x":1}', at)).toEqual({
      ok: false,
      reason: 'no signature matches this secret',
    });
    expect(verifySignature('whsec_a', header, '{"x":2}', at).ok).toBe(false);
    expect(verifySignature('whsec_a', undefined, '{"x":1}', at).ok).toBe(false);
    expect(verifySignature('whsec_a', 'v1=abc', '{"x":1}', at).ok).toBe(false);
  });

  it('private addresses: loopback, private, link-local, CGNAT, unique-local, mapped; public ones pass', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fc00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '224.0.0.1',
    ]) {
      expect(isPublicAddress(a), a).toBe(false);
    }
    for (const a of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '1.1.1.1'])
      expect(isPublicAddress(a), a).toBe(true);
    expect(() => checkEndpointUrl('http://user:pw@example.com/', false)).toThrow(/user name or password/);
    expect(checkEndpointUrl('http://127.0.0.1:3000/hook', true).host).toBe('127.0.0.1:3000');
  });

  it('event lists: empty or * is every event; unknown names are refused', () => {
    expect(parseEventList(undefined)).toEqual([]);
    expect(parseEventList('*')).toEqual([]);
    expect(parseEventList('feed.updated, token.expiring,feed.updated')).toEqual(['feed.updated', 'token.expiring']);
    expect(() => parseEventList('feed.updated,feed.deleted')).toThrow(/unknown event feed\.deleted/);
  });

  it('feed.updated lists: added, changed, removed post ids; all added after a demo feed', () => {
    expect(feedChanges({ a: '1', b: '2', c: '3' }, { a: '1', b: '9', d: '4' })).toEqual({
      added: ['d'],
      changed: ['b'],
      removed: ['c'],
    });
    expect(feedChanges(null, { a: '1' })).toEqual({ added: ['a'], changed: [], removed: [] });
  });
});
