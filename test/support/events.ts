import type { Db } from '../../src/store/db.ts';
import type { TokenEvent, TokenEventKind } from '../../src/store/events.ts';
import type { EventSink, WebhookEvent } from '../../src/webhooks/events.ts';

/** An account's token history, oldest first: what the tests read back (nothing in feedmirror needs it). */
export async function listEvents(db: Db, accountId: string, opts: { limit?: number } = {}): Promise<TokenEvent[]> {
  const { rows } = await db.query<{
    id: string;
    account_id: string;
    kind: TokenEventKind;
    expires_at: Date | null;
    detail: string | null;
    at: Date;
  }>(
    `SELECT id, account_id, kind, expires_at, detail, at FROM (
       SELECT * FROM token_events WHERE account_id = $1 ORDER BY id DESC LIMIT $2
     ) last ORDER BY id`,
    [accountId, opts.limit ?? 1000],
  );
  return rows.map((r) => ({
    id: Number(r.id),
    accountId: r.account_id,
    kind: r.kind,
    expiresAt: r.expires_at,
    detail: r.detail,
    at: r.at,
  }));
}

/** An event sink that keeps what was emitted (the webhook events a service sent), for tests of one service. */
export function collectingEvents(): EventSink & { emitted: WebhookEvent[] } {
  const emitted: WebhookEvent[] = [];
  return {
    emitted,
    emit: async (event) => {
      emitted.push(event);
    },
  };
}
