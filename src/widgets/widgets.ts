import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { widgetDocumentKey, widgetFragmentKey } from '../storage/keys.ts';
import { existingAccountIds } from '../store/accounts.ts';
import {
  deleteWidget,
  getWidget,
  hideWidgetPost,
  insertWidget,
  listWidgets,
  unhideWidgetPost,
  updateWidget,
  type StoredWidget,
} from '../store/widgets.ts';
import { ID_PATTERN } from '../util/ids.ts';
import { WIDGET_FILENAME } from '../embed/index.ts';
import {
  WIDGET_ID_PATTERN,
  WIDGET_LAYOUTS,
  WIDGET_LIMITS,
  widgetOptionsSchema,
  type WidgetLayout,
  type WidgetOptions,
} from '../schema/widget-document.ts';
import {
  deleteWidgetObjects,
  passesFilters,
  publishWidgetDocument,
  storedLayout,
  storedOptions,
  widgetSources,
  type WidgetDeps,
  type WidgetPublishOutcome,
} from './publish.ts';

/**
 * Widgets as operators manage them: create, change, delete, hide and unhide a post. The CLI and
 * the dashboard call these and nothing else; each validates its input (a WidgetInputError names
 * what is wrong), writes PostgreSQL, then publishes the widget's objects (R-WID-5).
 */
export class WidgetInputError extends Error {
  override readonly name = 'WidgetInputError';
  /** usage: the input is malformed; not_found: it names an account or post that does not exist. */
  constructor(
    message: string,
    readonly kind: 'usage' | 'not_found' = 'usage',
  ) {
    super(message);
  }
}
export class WidgetNotFoundError extends Error {
  override readonly name = 'WidgetNotFoundError';
  constructor(readonly widgetId: string) {
    super(`no widget ${JSON.stringify(widgetId)} (feedmirror widgets list shows them)`);
  }
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** `w_` + 10 random base32 characters (50 bits): short, url-safe, unguessable enough for a public id. */
export function newWidgetId(): string {
  const bytes = randomBytes(10);
  let out = 'w_';
  for (const b of bytes) out += BASE32.charAt(b & 31);
  return out;
}

const nameSchema = z
  .string({ error: 'name must be text' })
  .transform((s) => s.trim())
  .pipe(
    z
      .string()
      .min(1, { error: 'name must not be empty' })
      .max(WIDGET_LIMITS.name, { error: `name must be at most ${WIDGET_LIMITS.name} characters` }),
  );
const layoutSchema = z.enum(WIDGET_LAYOUTS, { error: `layout must be one of ${WIDGET_LAYOUTS.join(', ')}` });
/** The most accounts one widget merges (the dashboard's widget form is sized by it). */
export const WIDGET_MAX_ACCOUNTS = 50;
const accountsSchema = z
  .array(z.string().regex(ID_PATTERN, { error: 'an account id is 1-128 characters of A-Z a-z 0-9 _ -' }))
  .min(1, { error: 'a widget needs at least one account' })
  .max(WIDGET_MAX_ACCOUNTS, { error: `a widget merges at most ${WIDGET_MAX_ACCOUNTS} accounts` })
  .transform((ids) => [...new Set(ids)]);

/** The first problem of a zod error as one line: "limit must be at least 1". */
function firstProblem(error: z.ZodError): string {
  const i = error.issues[0];
  if (!i) return 'invalid input';
  if (i.code === 'unrecognized_keys') return `unknown option ${i.keys.map((k) => JSON.stringify(k)).join(', ')}`;
  return i.message;
}

function parse<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw new WidgetInputError(firstProblem(r.error));
  return r.data;
}

async function checkAccounts(deps: Pick<WidgetDeps, 'db'>, ids: readonly string[]): Promise<void> {
  const found = await existingAccountIds(deps.db, ids);
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length > 0)
    throw new WidgetInputError(
      `no account ${missing.map((m) => JSON.stringify(m)).join(', ')} (feedmirror accounts list shows them)`,
      'not_found',
    );
}

/** A widget as the CLI (--json) and the dashboard show it. */
export interface WidgetView {
  id: string;
  name: string;
  layout: WidgetLayout;
  options: WidgetOptions;
  accounts: string[];
  hiddenPosts: string[];
  createdAt: string;
  updatedAt: string;
  publishedAt: string | null;
  documentUrl: string;
  fragmentUrl: string;
  scriptUrl: string;
  /** What a site pastes: the container and the deferred script. */
  embed: string;
}

export function widgetView(deps: Pick<WidgetDeps, 'storage'>, w: StoredWidget): WidgetView {
  const scriptUrl = deps.storage.publicUrl(`widget/${WIDGET_FILENAME}`);
  return {
    id: w.id,
    name: w.name,
    layout: storedLayout(w),
    options: storedOptions(w),
    accounts: w.accountIds,
    hiddenPosts: w.hiddenPostIds,
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
    publishedAt: w.publishedAt ? w.publishedAt.toISOString() : null,
    documentUrl: deps.storage.publicUrl(widgetDocumentKey(w.id)),
    fragmentUrl: deps.storage.publicUrl(widgetFragmentKey(w.id)),
    scriptUrl,
    embed: embedSnippet(w.id, scriptUrl),
  };
}

/** R-WID-6: a site embeds a widget by its id alone; layout and options come from its document. */
export function embedSnippet(widgetId: string, scriptUrl: string): string {
  return `<div data-feedmirror-widget="${widgetId}"></div>\n<script defer src="${scriptUrl}"></script>`;
}

export interface WidgetInput {
  name?: unknown;
  layout?: unknown;
  accounts?: unknown;
  /** Options to change; the rest keep their value (defaults for a new widget). */
  options?: Record<string, unknown>;
}

/** Merge option changes into the current options (filters and columns key by key), then validate all. */
function mergedOptions(current: WidgetOptions | null, change: Record<string, unknown> = {}): WidgetOptions {
  const base: Record<string, unknown> = current ? { ...current } : {};
  for (const [k, v] of Object.entries(change)) {
    if (v === undefined) continue;
    if ((k === 'filters' || k === 'columns') && v && typeof v === 'object' && !Array.isArray(v))
      base[k] = { ...(base[k] ?? {}), ...v };
    else base[k] = v;
  }
  // A smaller maxPosts takes limit down with it rather than refusing the change.
  if (change.maxPosts !== undefined && change.limit === undefined && typeof base.limit === 'number')
    base.limit = Math.min(base.limit, Number(change.maxPosts) || base.limit);
  return parse(widgetOptionsSchema, base);
}

export interface WidgetChanged {
  widget: WidgetView;
  publish: WidgetPublishOutcome;
}

async function viewOf(deps: WidgetDeps, id: string, publish: WidgetPublishOutcome): Promise<WidgetChanged> {
  const w = await getWidget(deps.db, id);
  if (!w) throw new WidgetNotFoundError(id);
  return { widget: widgetView(deps, w), publish };
}

export async function createWidget(deps: WidgetDeps, input: WidgetInput): Promise<WidgetChanged> {
  const name = parse(nameSchema, input.name);
  const layout = input.layout === undefined ? 'grid' : parse(layoutSchema, input.layout);
  const accounts = parse(accountsSchema, input.accounts ?? []);
  const options = mergedOptions(null, input.options);
  await checkAccounts(deps, accounts);
  const id = newWidgetId();
  await insertWidget(deps.db, { id, name, layout, options, accountIds: accounts }, deps.clock.now());
  deps.logger.info({ widgetId: id, accounts: accounts.length }, 'widget created');
  return viewOf(deps, id, await publishWidgetDocument(deps, id));
}

export async function changeWidget(deps: WidgetDeps, id: string, input: WidgetInput): Promise<WidgetChanged> {
  const w = await requireWidget(deps, id);
  const name = input.name === undefined ? undefined : parse(nameSchema, input.name);
  const layout = input.layout === undefined ? undefined : parse(layoutSchema, input.layout);
  const accounts = input.accounts === undefined ? undefined : parse(accountsSchema, input.accounts);
  const options = input.options === undefined ? undefined : mergedOptions(storedOptions(w), input.options);
  if (accounts) await checkAccounts(deps, accounts);
  const changed = await updateWidget(
    deps.db,
    w.id,
    {
      ...(name !== undefined ? { name } : {}),
      ...(layout !== undefined ? { layout } : {}),
      ...(options !== undefined ? { options } : {}),
      ...(accounts !== undefined ? { accountIds: accounts } : {}),
    },
    deps.clock.now(),
  );
  if (!changed) throw new WidgetNotFoundError(id);
  return viewOf(deps, w.id, await publishWidgetDocument(deps, w.id));
}

/** Delete a widget: its objects first (a site then gets a 404, not a stale widget), then its rows. */
export async function removeWidget(deps: WidgetDeps, id: string): Promise<WidgetView> {
  const w = await requireWidget(deps, id);
  // R-DEL-1: in a storage that is not this deployment's the objects stay (the guard says why).
  await deleteWidgetObjects(deps, w.id);
  await deleteWidget(deps.db, w.id);
  deps.logger.info({ widgetId: w.id }, 'widget removed');
  return widgetView(deps, w);
}

export async function requireWidget(deps: Pick<WidgetDeps, 'db'>, id: string): Promise<StoredWidget> {
  const w = WIDGET_ID_PATTERN.test(id) ? await getWidget(deps.db, id) : null;
  if (!w) throw new WidgetNotFoundError(id);
  return w;
}

export async function listWidgetViews(deps: Pick<WidgetDeps, 'db' | 'storage'>): Promise<WidgetView[]> {
  return (await listWidgets(deps.db)).map((w) => widgetView(deps, w));
}

/**
 * Hide a post in a widget (R-WID-3): by post id, so it stays hidden through re-syncs and
 * reconnects. The post must be one the widget's accounts publish now.
 */
export async function hidePost(deps: WidgetDeps, id: string, postId: string): Promise<WidgetChanged> {
  const w = await requireWidget(deps, id);
  const sources = await widgetSources(deps, w);
  if (!ID_PATTERN.test(postId) || !sources.posts.some((p) => p.id === postId))
    throw new WidgetInputError(
      `no post ${JSON.stringify(postId)} in the feeds of widget ${w.id}'s accounts (feedmirror widgets show ${w.id} lists them)`,
      'not_found',
    );
  await hideWidgetPost(deps.db, w.id, postId, deps.clock.now());
  return viewOf(deps, w.id, await publishWidgetDocument(deps, w.id));
}

export async function unhidePost(deps: WidgetDeps, id: string, postId: string): Promise<WidgetChanged> {
  const w = await requireWidget(deps, id);
  if (!ID_PATTERN.test(postId) || !(await unhideWidgetPost(deps.db, w.id, postId)))
    throw new WidgetInputError(`post ${JSON.stringify(postId)} is not hidden in widget ${w.id}`, 'not_found');
  return viewOf(deps, w.id, await publishWidgetDocument(deps, w.id));
}

/** A post a widget may show, as the CLI's show and the dashboard's moderation list present it. */
export interface WidgetCandidate {
  id: string;
  accountId: string;
  username: string;
  publishedAt: string;
  type: string;
  text: string;
  thumbnailUrl: string | null;
  url: string;
  /** Hidden by the operator. */
  hidden: boolean;
  /** Left out by the widget's filters (type, hashtags). */
  filtered: boolean;
}

/** Every post of the widget's accounts' feeds, newest first, with whether it is hidden or filtered out. */
export async function widgetCandidates(
  deps: Pick<WidgetDeps, 'db' | 'storage'>,
  w: StoredWidget,
): Promise<WidgetCandidate[]> {
  const options = storedOptions(w);
  const hidden = new Set(w.hiddenPostIds);
  const { posts } = await widgetSources(deps, w);
  return posts.map((p) => ({
    id: p.id,
    accountId: p.accountId,
    username: p.username,
    publishedAt: p.publishedAt,
    type: p.type,
    text: p.text,
    thumbnailUrl: p.thumbnailUrl ?? null,
    url: p.url,
    hidden: hidden.has(p.id),
    filtered: !passesFilters(p, options.filters),
  }));
}
