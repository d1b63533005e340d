import { withTransaction, type Db } from './db.ts';

/**
 * The widget tables (migrations/015): widgets, the accounts each merges (in order), the posts an
 * operator hid, what was last published, and the views counted per day. Options are stored as the
 * validated JSON of src/schema/widget-document.ts and parsed again when read.
 */
export interface StoredWidget {
  id: string;
  name: string;
  layout: string;
  options: unknown;
  createdAt: Date;
  updatedAt: Date;
  /** In their position order. */
  accountIds: string[];
  /** Sorted. */
  hiddenPostIds: string[];
  publishedHash: string | null;
  publishedAt: Date | null;
  publishedAccounts: string[];
}

interface WidgetRow {
  id: string;
  name: string;
  layout: string;
  options: unknown;
  created_at: Date;
  updated_at: Date;
  published_hash: string | null;
  published_at: Date | null;
  published_accounts: string[];
  account_ids: string[] | null;
  hidden: string[] | null;
}

const SELECT = `
  SELECT w.id, w.name, w.layout, w.options, w.created_at, w.updated_at, w.published_hash, w.published_at,
         w.published_accounts,
         (SELECT array_agg(a.account_id ORDER BY a.position, a.account_id) FROM widget_accounts a WHERE a.widget_id = w.id) AS account_ids,
         (SELECT array_agg(h.post_id ORDER BY h.post_id) FROM widget_hidden_posts h WHERE h.widget_id = w.id) AS hidden
    FROM widgets w`;

function fromRow(r: WidgetRow): StoredWidget {
  return {
    id: r.id,
    name: r.name,
    layout: r.layout,
    options: r.options,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    accountIds: r.account_ids ?? [],
    hiddenPostIds: r.hidden ?? [],
    publishedHash: r.published_hash,
    publishedAt: r.published_at,
    publishedAccounts: r.published_accounts,
  };
}

export async function getWidget(db: Db, id: string): Promise<StoredWidget | null> {
  const { rows } = await db.query<WidgetRow>(`${SELECT} WHERE w.id = $1`, [id]);
  return rows[0] ? fromRow(rows[0]) : null;
}

/** Every widget, by name. */
export async function listWidgets(db: Db): Promise<StoredWidget[]> {
  const { rows } = await db.query<WidgetRow>(`${SELECT} ORDER BY lower(w.name), w.id`);
  return rows.map(fromRow);
}

export interface NewWidget {
  id: string;
  name: string;
  layout: string;
  options: unknown;
  accountIds: readonly string[];
}

/** Insert a widget and its accounts in one transaction. The accounts must exist (a foreign key). */
export async function insertWidget(db: Db, w: NewWidget, at: Date): Promise<void> {
  await withTransaction(db, async (c) => {
    await c.query(
      `INSERT INTO widgets (id, name, layout, options, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`,
      [w.id, w.name, w.layout, JSON.stringify(w.options), at],
    );
    await setAccounts(c, w.id, w.accountIds);
  });
}

async function setAccounts(c: Db, widgetId: string, accountIds: readonly string[]): Promise<void> {
  await c.query('DELETE FROM widget_accounts WHERE widget_id = $1', [widgetId]);
  await c.query(
    `INSERT INTO widget_accounts (widget_id, account_id, position)
     SELECT $1, a, p - 1 FROM unnest($2::text[]) WITH ORDINALITY AS t(a, p)`,
    [widgetId, [...accountIds]],
  );
}

export interface WidgetChange {
  name?: string;
  layout?: string;
  options?: unknown;
  /** Replaces the widget's accounts (in this order). */
  accountIds?: readonly string[];
}

/** Change a widget; false when it does not exist. */
export async function updateWidget(db: Db, id: string, change: WidgetChange, at: Date): Promise<boolean> {
  return withTransaction(db, async (c) => {
    const { rowCount } = await c.query(
      `UPDATE widgets SET name = COALESCE($2, name), layout = COALESCE($3, layout),
              options = COALESCE($4::jsonb, options), updated_at = $5
        WHERE id = $1`,
      [
        id,
        change.name ?? null,
        change.layout ?? null,
        change.options === undefined ? null : JSON.stringify(change.options),
        at,
      ],
    );
    if (!rowCount) return false;
    if (change.accountIds) await setAccounts(c, id, change.accountIds);
    return true;
  });
}

/** Delete a widget with its accounts, hidden posts and views; false when it did not exist. */
export async function deleteWidget(db: Db, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM widgets WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

/** Hide a post in a widget; false when it was hidden already. */
export async function hideWidgetPost(db: Db, widgetId: string, postId: string, at: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO widget_hidden_posts (widget_id, post_id, hidden_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [widgetId, postId, at],
  );
  return (rowCount ?? 0) > 0;
}

/** Show a hidden post again; false when it was not hidden. */
export async function unhideWidgetPost(db: Db, widgetId: string, postId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM widget_hidden_posts WHERE widget_id = $1 AND post_id = $2', [
    widgetId,
    postId,
  ]);
  return (rowCount ?? 0) > 0;
}

/**
 * The widgets an account's posts appear in or should: those that merge it, and those whose
 * published document still shows it (after its removal took it out of widget_accounts).
 */
export async function widgetIdsOfAccount(db: Db, accountId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT widget_id AS id FROM widget_accounts WHERE account_id = $1
     UNION SELECT id FROM widgets WHERE published_accounts @> ARRAY[$1]::text[]
     ORDER BY id`,
    [accountId],
  );
  return rows.map((r) => r.id);
}

/** Record what was published (its hash and accounts). */
export async function saveWidgetPublication(
  db: Db,
  id: string,
  p: { hash: string; at: Date; accounts: readonly string[] },
): Promise<void> {
  await db.query('UPDATE widgets SET published_hash = $2, published_at = $3, published_accounts = $4 WHERE id = $1', [
    id,
    p.hash,
    p.at,
    [...p.accounts],
  ]);
}

/** What a widget's document says of a source account. */
export interface WidgetSourceFacts {
  id: string;
  username: string;
  displayName: string | null;
  avatarUrl: string | null;
  status: string;
  /**
   * Since when the account's syncs fail or stop early (R-HLT-2's "failed or stopped early"): the
   * first such run after its last complete one (or the status change when its owner must connect
   * again); null while its last sync was complete.
   */
  failingSince: Date | null;
}

export async function widgetSourceFacts(db: Db, accountIds: readonly string[]): Promise<WidgetSourceFacts[]> {
  const { rows } = await db.query<{
    id: string;
    username: string;
    display_name: string | null;
    avatar_url: string | null;
    status: string;
    failing_since: Date | null;
  }>(
    `SELECT a.id, a.username, a.display_name, a.avatar_url, a.status,
            CASE
              WHEN a.status <> 'active' THEN LEAST(a.updated_at, COALESCE(f.since, a.updated_at))
              WHEN a.last_sync_outcome IN ('failed', 'incomplete') THEN COALESCE(f.since, a.last_sync_at)
            END AS failing_since
       FROM accounts a
       LEFT JOIN LATERAL (
         SELECT min(r.at) AS since FROM sync_runs r
          WHERE r.account_id = a.id AND r.outcome <> 'complete'
            AND r.at > COALESCE((SELECT max(s.at) FROM sync_runs s WHERE s.account_id = a.id AND s.outcome = 'complete'),
                                '-infinity'::timestamptz)
       ) f ON a.last_sync_outcome IN ('failed', 'incomplete') OR a.status <> 'active'
      WHERE a.id = ANY($1::text[])`,
    [[...accountIds]],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return accountIds.flatMap((id) => {
    const r = byId.get(id);
    return r
      ? [
          {
            id: r.id,
            username: r.username,
            displayName: r.display_name,
            avatarUrl: r.avatar_url,
            status: r.status,
            failingSince: r.failing_since,
          },
        ]
      : [];
  });
}

/** Count one view of a widget on `day` (YYYY-MM-DD, UTC); false when the widget does not exist. */
export async function countWidgetView(db: Db, widgetId: string, day: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO widget_views (widget_id, day, count) SELECT id, $2::date, 1 FROM widgets WHERE id = $1
     ON CONFLICT (widget_id, day) DO UPDATE SET count = widget_views.count + 1`,
    [widgetId, day],
  );
  return (rowCount ?? 0) > 0;
}

/** Views per widget over the last 7 and 30 days (today included), for every widget that has any. */
export async function widgetViewTotals(db: Db, today: string): Promise<Map<string, { last7: number; last30: number }>> {
  const { rows } = await db.query<{ widget_id: string; last7: string; last30: string }>(
    `SELECT widget_id,
            COALESCE(sum(count) FILTER (WHERE day > $1::date - 7), 0) AS last7,
            sum(count) AS last30
       FROM widget_views WHERE day > $1::date - 30 AND day <= $1::date
      GROUP BY widget_id`,
    [today],
  );
  return new Map(rows.map((r) => [r.widget_id, { last7: Number(r.last7), last30: Number(r.last30) }]));
}
