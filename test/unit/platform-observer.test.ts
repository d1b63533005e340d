import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformClient, type PlatformCallOutcome } from '../../src/platform/client.ts';
import { RateLimitedError, TokenInvalidError } from '../../src/platform/errors.ts';
import { createMetrics } from '../../src/metrics/index.ts';
import { parseExposition } from '../../src/metrics/exposition.ts';
import { operationLabel, platformCallObserver } from '../../src/metrics/observe.ts';

/**
 * The client's observer seam: every request sent reports exactly once (retries each report), with
 * the outcome the metrics label, and an observer that throws never breaks a call.
 */
const TOKEN = 'IGAAobserverTOKEN0001';
let replies: Array<(res: ServerResponse) => void> = [];
const server = createServer((_req, res) => {
  const next = replies.shift();
  if (next) next(res);
  else json(res, 200, { id: '17900001', media_type: 'IMAGE', media_url: 'https://scontent.cdninstagram.com/a.jpg' });
});
function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
let base: string;

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function client(onCall: (op: string, outcome: PlatformCallOutcome) => void) {
  return new PlatformClient({
    graphUrl: base,
    apiVersion: 'v25.0',
    oauthTokenUrl: `${base}/oauth`,
    maxRetries: 2,
    sleep: async () => undefined,
    observer: { onCall },
  });
}

describe('platform call observer', () => {
  it('reports each attempt once: a retried 500 is transient, then ok', async () => {
    const seen: Array<[string, PlatformCallOutcome]> = [];
    replies = [(res) => json(res, 500, { error: { message: 'boom', code: 2, is_transient: true } })];
    await client((op, o) => seen.push([op, o])).getMedia(TOKEN, '17900001');
    expect(seen).toEqual([
      ['media item', 'transient'],
      ['media item', 'ok'],
    ]);
  });

  it('R-OWN-1: a rate-limit answer reports rate_limited; a dead token reports error', async () => {
    const seen: PlatformCallOutcome[] = [];
    replies = [(res) => json(res, 429, { error: { message: '(#17) User request limit reached', code: 17 } })];
    await expect(client((_, o) => seen.push(o)).getMedia(TOKEN, '17900001')).rejects.toBeInstanceOf(RateLimitedError);
    replies = [
      (res) => json(res, 400, { error: { message: 'Error validating access token', code: 190, error_subcode: 463 } }),
    ];
    await expect(client((_, o) => seen.push(o)).getMedia(TOKEN, '17900001')).rejects.toBeInstanceOf(TokenInvalidError);
    expect(seen).toEqual(['rate_limited', 'error']);
  });

  it('an observer that throws does not fail the call', async () => {
    replies = [];
    const item = await client(() => {
      throw new Error('observer broke');
    }).getMedia(TOKEN, '17900001');
    expect(item.id).toBe('17900001');
  });

  it('platformCallObserver counts into feedmirror_platform_calls_total with snake_case operations', async () => {
    expect(operationLabel('media list')).toBe('media_list');
    expect(operationLabel('Token Refresh')).toBe('token_refresh');
    expect(operationLabel(undefined)).toBe('unknown');
    const m = createMetrics({ processMetrics: false });
    replies = [(res) => json(res, 503, { error: { message: 'later', code: 1, is_transient: true } })];
    await client((op, o) => platformCallObserver(m).onCall(op, o)).getMedia(TOKEN, '17900001');
    const fam = parseExposition(await m.metricsText()).get('feedmirror_platform_calls_total');
    const value = (outcome: string) =>
      fam?.samples.find((s) => s.labels.operation === 'media_item' && s.labels.outcome === outcome)?.value;
    expect(value('transient')).toBe(1);
    expect(value('ok')).toBe(1);
  });
});
