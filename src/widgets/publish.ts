import { createHash } from 'node:crypto';
import { DEFAULT_FEED_MAX_AGE_SECONDS, FEED_CONTENT_TYPE } from '../feeds/publish.ts';
import { contentHash } from '../util/content-hash.ts';
import { PROFILE_URL_BASE } from '../platform/identifiers.ts';
import type { Feed } from '../schema/v1.ts';
import { validateFeed } from '../schema/validate.ts';
import { feedKey, widgetDocumentKey, widgetFragmentKey } from '../storage/keys.ts';
import type { ObjectStorage } from '../storage/types.ts';
import type { Db } from '../store/db.ts';
import { openDeletions } from '../deletion/guard.ts';
import {
  getWidget,
  saveWidgetPublication,
  widgetIdsOfAccount,
  widgetSourceFacts,
  type StoredWidget,
} from '../store/widgets.ts';
import type { Clock } from '../util/clock.ts';
import type { Logger } from '../util/logger.ts';
import { renderWidgetFragment } from '../embed/markup.ts';
import {
  widgetDocumentSchema,
  widgetOptionsSchema,
  WIDGET_LAYOUTS,
  type WidgetDocument,
  type WidgetDocumentAccount,
  type WidgetLayout,
  type WidgetOptions,
  type WidgetPost,
} from '../schema/widget-document.ts';

/**
 * A widget's two public objects, widgets/<id>.json (the document, src/schema/widget-document.ts) and
 * widgets/<id>.html (the same widget as static markup), built from the feeds its accounts
 * publish: what a site reads from feeds/<accountId>.json is exactly what its widget shows
 * (R-WID-2). The CLI, the dashboard and the worker all publish through publishWidgetDocument.
 */
export interface WidgetDeps {
  db: Db;
  storage: ObjectStorage;
  clock: Clock;
  logger: Logger;
  /** Cache-Control max-age of the objects, as the feeds' (default 300 s). */
  feedMaxAgeSeconds?: number;
  /** Where the script reports views (WIDGET_VIEWS_URL + /w/<id>/view); absent: views are not counted. */
  viewsBaseUrl?: string;
}

export const WIDGET_HTML_CONTENT_TYPE = 'text/html; charset=utf-8';

/** A source account's feed as published, or null (none yet, unreadable, or not this account's). */
async function readSourceFeed(storage: ObjectStorage, accountId: string): Promise<Feed | null> {
  const obj = await storage.get(feedKey(accountId));
  if (!obj) return null;
  let json: unknown;
  try {
    json = JSON.parse(obj.body.toString('utf8'));
  } catch {
    return null;
  }
  const checked = validateFeed(json);
  if (!checked.ok) return null;
  // A real feed names its account; the demo feed is the same for every account.
  if (!checked.feed.demo && checked.feed.origin.id !== accountId) return null;
  return checked.feed;
}

/** The hashtags of a caption, without # and in lower case (R-WID-4). */
export function hashtagsOf(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/#([\p{L}\p{N}_]+)/gu)) out.add(m[1]!.toLowerCase());
  return out;
}

/** Whether a post passes the widget's filters (R-WID-4): its type, and the hashtags of its caption. */
export function passesFilters(post: Pick<WidgetPost, 'type' | 'text'>, filters: WidgetOptions['filters']): boolean {
  if (filters.types.length > 0 && !(filters.types as readonly string[]).includes(post.type)) return false;
  if (filters.includeTags.length === 0 && filters.excludeTags.length === 0) return true;
  const tags = hashtagsOf(post.text);
  if (filters.includeTags.length > 0 && !filters.includeTags.some((t) => tags.has(t))) return false;
  return !filters.excludeTags.some((t) => tags.has(t));
}

/** Newest first; ties by account, then post id, so the order never depends on reading order. */
function newestFirst(a: WidgetPost, b: WidgetPost): number {
  const t = Date.parse(b.publishedAt) - Date.parse(a.publishedAt);
  if (t !== 0) return t;
  return a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

export interface WidgetSources {
  accounts: WidgetDocumentAccount[];
  /** Every post of the widget's accounts' feeds, newest first, before hiding and filters. */
  posts: WidgetPost[];
  demo: boolean;
  staleSince: Date | null;
}

/**
 * The posts a widget may show: its accounts' published feeds merged, newest first (R-WID-1).
 * Demo feeds (R-SCH-11): while every account still shows the demo feed, the widget shows one copy
 * of it and says demo; once any account has a real feed, demo feeds add nothing.
 */
export async function widgetSources(
  deps: Pick<WidgetDeps, 'db' | 'storage'>,
  widget: Pick<StoredWidget, 'accountIds'>,
): Promise<WidgetSources> {
  const facts = await widgetSourceFacts(deps.db, widget.accountIds);
  const feeds = await Promise.all(facts.map((f) => readSourceFeed(deps.storage, f.id)));
  const real = feeds.some((f) => f !== null && !f.demo);
  const accounts: WidgetDocumentAccount[] = [];
  const posts: WidgetPost[] = [];
  let demoShown = false;
  let staleSince: Date | null = null;
  facts.forEach((f, i) => {
    const feed = feeds[i] ?? null;
    const origin = feed && !feed.demo ? feed.origin : null;
    accounts.push({
      id: f.id,
      username: f.username,
      displayName: origin?.displayName ?? f.displayName ?? f.username,
      profileUrl: origin?.url ?? `${PROFILE_URL_BASE}${encodeURIComponent(f.username)}/`,
      avatarUrl: origin?.avatarUrl ?? null,
    });
    // R-WID-8: the earliest time since which a source's syncs fail.
    if (f.failingSince && (!staleSince || f.failingSince < staleSince)) staleSince = f.failingSince;
    if (!feed || (feed.demo && (real || demoShown))) return;
    if (feed.demo) demoShown = true;
    for (const post of feed.posts) {
      // raw (the platform's payload) is left out: no widget reads it and it is most of a post's bytes.
      const { raw: _raw, ...rest } = post;
      posts.push({ ...rest, accountId: f.id, username: f.username });
    }
  });
  return { accounts, posts: posts.sort(newestFirst), demo: !real && demoShown, staleSince };
}

/** A stored widget's options, parsed again (defaults filled for options added since it was saved). */
export function storedOptions(widget: Pick<StoredWidget, 'options'>): WidgetOptions {
  const parsed = widgetOptionsSchema.safeParse(widget.options ?? {});
  return parsed.success ? parsed.data : widgetOptionsSchema.parse({});
}

export function storedLayout(widget: Pick<StoredWidget, 'layout'>): WidgetLayout {
  return (WIDGET_LAYOUTS as readonly string[]).includes(widget.layout) ? (widget.layout as WidgetLayout) : 'grid';
}

/** The view beacon's address for a widget, or null when views are not counted. */
export function viewsUrlOf(deps: Pick<WidgetDeps, 'viewsBaseUrl'>, widgetId: string): string | null {
  return deps.viewsBaseUrl ? `${deps.viewsBaseUrl.replace(/\/+$/, '')}/w/${widgetId}/view` : null;
}

/** The document of a widget now: sources merged, hidden posts and filtered ones out, capped (R-WID-1..4). */
export async function buildWidgetDocument(
  deps: Pick<WidgetDeps, 'db' | 'storage' | 'clock' | 'viewsBaseUrl'>,
  widget: StoredWidget,
): Promise<WidgetDocument> {
  const options = storedOptions(widget);
  const sources = await widgetSources(deps, widget);
  const hidden = new Set(widget.hiddenPostIds);
  const posts = sources.posts
    .filter((p) => !hidden.has(p.id) && passesFilters(p, options.filters))
    .slice(0, options.maxPosts);
  const doc = {
    version: 1 as const,
    id: widget.id,
    name: widget.name,
    generatedAt: deps.clock.now().toISOString(),
    staleSince: sources.staleSince ? sources.staleSince.toISOString() : null,
    demo: sources.demo,
    layout: storedLayout(widget),
    options,
    accounts: sources.accounts,
    posts,
    viewsUrl: viewsUrlOf(deps, widget.id),
  };
  // What is published is what the script is written against: a mismatch is our bug, caught here.
  return widgetDocumentSchema.parse(doc);
}

export type WidgetPublishOutcome =
  | { outcome: 'written' | 'unchanged'; id: string; posts: number; documentKey: string; fragmentKey: string }
  | { outcome: 'missing'; id: string };

const GENERATED_AT_FOR_HASH = '1970-01-01T00:00:00.000Z';

/**
 * Publish widgets/<id>.json and widgets/<id>.html. Idempotent and cheap: an unchanged widget (same
 * content hash, generatedAt left out; the markup's own bytes included, so a new renderer rewrites
 * it) costs one HEAD and writes nothing. The fragment is written first, the document last, so a
 * document never announces what its fragment lacks. 'missing' when the widget does not exist.
 */
export async function publishWidgetDocument(
  deps: WidgetDeps,
  widgetId: string,
  opts: { rewrite?: boolean } = {},
): Promise<WidgetPublishOutcome> {
  const widget = await getWidget(deps.db, widgetId);
  if (!widget) return { outcome: 'missing', id: widgetId };
  const doc = await buildWidgetDocument(deps, widget);
  const html = renderWidgetFragment(doc);
  const htmlForHash = renderWidgetFragment({ ...doc, generatedAt: GENERATED_AT_FOR_HASH });
  const { generatedAt: _g, ...content } = doc;
  const hash = `${contentHash(content)}.${createHash('sha256').update(htmlForHash).digest('hex').slice(0, 16)}`;
  const documentKey = widgetDocumentKey(widget.id);
  const fragmentKey = widgetFragmentKey(widget.id);
  const now = deps.clock.now();
  const same = widget.publishedHash === hash && opts.rewrite !== true;
  if (same && (await deps.storage.head(documentKey)))
    return { outcome: 'unchanged', id: widget.id, posts: doc.posts.length, documentKey, fragmentKey };
  const cacheControl = `public, max-age=${deps.feedMaxAgeSeconds ?? DEFAULT_FEED_MAX_AGE_SECONDS}`;
  await deps.storage.put(fragmentKey, Buffer.from(html), { contentType: WIDGET_HTML_CONTENT_TYPE, cacheControl });
  await deps.storage.put(documentKey, Buffer.from(JSON.stringify(doc)), {
    contentType: FEED_CONTENT_TYPE,
    cacheControl,
  });
  await saveWidgetPublication(deps.db, widget.id, { hash, at: now, accounts: widget.accountIds });
  deps.logger.info({ widgetId: widget.id, posts: doc.posts.length }, 'widget published');
  return { outcome: 'written', id: widget.id, posts: doc.posts.length, documentKey, fragmentKey };
}

/**
 * Delete a widget's public objects (a missing one is fine), through the deletion guard
 * (R-DEL-1..3): only in this deployment's storage, only while the widget is still recorded.
 * Returns why they were not deleted, when they were not (the guard has logged it).
 */
export async function deleteWidgetObjects(deps: WidgetDeps, widgetId: string): Promise<string | undefined> {
  const run = await openDeletions(deps, { by: 'widget removal' });
  const r = await run.removeWidgetObjects(widgetId, async () => (await getWidget(deps.db, widgetId)) !== null);
  return r.refused;
}

/**
 * Republish every widget that shows (or showed) an account's posts: after its feed was
 * published, its sync failed, or it was removed (R-WID-5). One query when it is in no widget.
 */
export async function republishWidgetsOfAccount(deps: WidgetDeps, accountId: string): Promise<WidgetPublishOutcome[]> {
  const out: WidgetPublishOutcome[] = [];
  for (const id of await widgetIdsOfAccount(deps.db, accountId)) out.push(await publishWidgetDocument(deps, id));
  return out;
}

/**
 * The listener the feed pipeline and the account lifecycle call (FeedDeps.widgets,
 * LifecycleDeps.accountChanged): republishes the account's widgets, and never fails the feed's
 * own work: a failure is logged, and the next publication of the account (or the worker's start)
 * publishes the widget.
 */
export function widgetRepublisher(deps: WidgetDeps): (accountId: string) => Promise<void> {
  return async (accountId) => {
    try {
      await republishWidgetsOfAccount(deps, accountId);
    } catch (err) {
      deps.logger.warn({ err, accountId }, 'could not republish the widgets of this account; the next sync does');
    }
  };
}

/** Publish every widget (the worker's start: a widget missed while storage was down is caught up). */
export async function publishAllWidgets(deps: WidgetDeps, ids: readonly string[]): Promise<WidgetPublishOutcome[]> {
  const out: WidgetPublishOutcome[] = [];
  for (const id of ids) out.push(await publishWidgetDocument(deps, id));
  return out;
}
