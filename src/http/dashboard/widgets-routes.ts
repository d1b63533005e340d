import type { Request, Response, Router } from 'express';
import { FeedHideError } from '../../feeds/hide.ts';
import { listAccounts } from '../../store/accounts.ts';
import { listHiddenFeedPosts } from '../../store/hidden-posts.ts';
import { getPost } from '../../store/posts.ts';
import { widgetViewTotals } from '../../store/widgets.ts';
import { widgetDocumentKey } from '../../storage/keys.ts';
import type { WidgetDeps } from '../../widgets/publish.ts';
import {
  changeWidget,
  createWidget,
  hidePost,
  listWidgetViews,
  removeWidget,
  requireWidget,
  unhidePost,
  widgetCandidates,
  widgetView,
  WidgetInputError,
  WidgetNotFoundError,
  type WidgetInput,
} from '../../widgets/widgets.ts';
import { WIDGET_FILTER_TYPES } from '../../schema/widget-document.ts';
import { WIDGET_MAX_ACCOUNTS } from '../../widgets/widgets.ts';
import type { AsyncHandler, DashboardContext } from './context.ts';
import { COPY_SCRIPT, widgetPage, widgetsPage, WIDGETS_PATH, type FeedHiddenPost } from './widgets-views.ts';

/**
 * The dashboard's widget routes (under the session and the CSRF check of every POST, see
 * index.ts). Every action calls the same function as the CLI (src/widgets/widgets.ts), which
 * validates, writes PostgreSQL and publishes the widget.
 */

/**
 * A widget's published document for the dashboard's preview (any storage, S3 included), without
 * its viewsUrl: the operator's own looks are not views. Served behind the login and to a signed
 * preview address (index.ts).
 */
export function widgetPreviewDocument(deps: WidgetDeps): (req: Request, res: Response) => Promise<void> {
  return async (req, res) => {
    let w;
    try {
      w = await requireWidget(deps, String(req.params.id ?? ''));
    } catch (err) {
      if (!(err instanceof WidgetNotFoundError)) throw err;
      res.status(404).type('text/plain').send('No such widget.\n');
      return;
    }
    const obj = await deps.storage.get(widgetDocumentKey(w.id));
    if (!obj) {
      res.status(404).type('text/plain').send('Not published yet.\n');
      return;
    }
    const doc = JSON.parse(obj.body.toString('utf8')) as Record<string, unknown>;
    res.set('Cache-Control', 'no-store').json({ ...doc, viewsUrl: null });
  };
}

/** The widget settings form's one-value fields, its CSRF token included (editInput reads them). */
export const WIDGET_SETTING_FIELDS = [
  '_csrf',
  'name',
  'layout',
  'theme',
  'captions',
  'limit',
  'maxPosts',
  'columnsPhone',
  'columnsTablet',
  'columnsDesktop',
  'radius',
  'gap',
  'header',
  'date',
  'badges',
  'includeTags',
  'excludeTags',
] as const;

/**
 * The most fields a widget's form sends: its settings, a checkbox per post type and one per
 * account it merges (72). Every other dashboard form sends at most 20 (index.ts).
 */
export const WIDGET_FORM_MAX_FIELDS = WIDGET_SETTING_FIELDS.length + WIDGET_FILTER_TYPES.length + WIDGET_MAX_ACCOUNTS;

/** POST /widgets (create) and POST /widgets/<id> (save settings): the forms that carry account and type checkboxes. */
export function isWidgetFormPost(method: string, path: string): boolean {
  return method === 'POST' && /^\/widgets(?:\/[^/]+)?\/?$/.test(path);
}

const today = (d: Date) => d.toISOString().slice(0, 10);
const fieldValues = (v: unknown): string[] => ([] as unknown[]).concat(v ?? []).map(String);
/** A form field as text: a repeated field's values joined with commas, as String() would. */
const fieldText = (v: unknown): string => fieldValues(v).join(',');
const words = (v: unknown): string[] =>
  fieldText(v)
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
const int = (v: unknown): unknown => (typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v);

/** The edit form's fields as a widget change (checkboxes: absent = off). */
function editInput(body: Record<string, unknown>): WidgetInput {
  return {
    name: body.name,
    layout: body.layout,
    accounts: fieldValues(body.accounts),
    options: {
      limit: int(body.limit),
      maxPosts: int(body.maxPosts),
      columns: { phone: int(body.columnsPhone), tablet: int(body.columnsTablet), desktop: int(body.columnsDesktop) },
      radius: int(body.radius),
      gap: int(body.gap),
      theme: body.theme,
      captions: body.captions,
      header: body.header === 'on',
      date: body.date === 'on',
      badges: body.badges === 'on',
      filters: {
        types: fieldValues(body.types),
        includeTags: words(body.includeTags),
        excludeTags: words(body.excludeTags),
      },
    },
  };
}

export function registerWidgetRoutes(guarded: Router, c: DashboardContext, deps: WidgetDeps): void {
  const w = widgetHandlers(c, deps);
  guarded.get('/widgets/copy.js', (_req: Request, res: Response) => {
    res.set({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' }).type('application/javascript');
    res.send(COPY_SCRIPT);
  });
  guarded.get('/widgets', c.wrap(w.list));
  guarded.post('/widgets', c.wrap(w.create));
  guarded.get('/widgets/:id', c.wrap(w.page));
  guarded.get('/widgets/:id/document.json', c.wrap(widgetPreviewDocument(deps)));
  const action = (path: string, fn: WidgetAction) => guarded.post(path, c.wrap(w.action(fn)));
  action('/widgets/:id', async (id, body) => {
    const { widget, publish } = await changeWidget(deps, id, editInput(body));
    return `Saved; ${publish.outcome === 'unchanged' ? 'nothing changed' : 'published'} (${widget.layout}).`;
  });
  action('/widgets/:id/hide', async (id, body) => {
    await hidePost(deps, id, fieldText(body.postId));
    return `Post ${fieldText(body.postId)} hidden.`;
  });
  action('/widgets/:id/unhide', async (id, body) => {
    await unhidePost(deps, id, fieldText(body.postId));
    return `Post ${fieldText(body.postId)} shown again.`;
  });
  // R-OWN-17: from its account's feed, so from every widget and site; only for the widget's accounts.
  const feedHide = c.deps.feedHides;
  if (feedHide) {
    const ofWidget = async (id: string, body: Record<string, unknown>) => {
      const stored = await requireWidget(deps, id);
      const accountId = fieldText(body.accountId);
      if (!stored.accountIds.includes(accountId))
        throw new WidgetInputError(`account ${JSON.stringify(accountId)} is not one of this widget's accounts`);
      return { accountId, postId: fieldText(body.postId) };
    };
    action('/widgets/:id/feed-hide', async (id, body) => {
      const { accountId, postId } = await ofWidget(id, body);
      const done = await feedHide.hide(accountId, postId);
      return `Post ${postId} hidden from its account's feed (and every widget); it stays stored with its images.${done.changed ? '' : ' It was hidden already.'}`;
    });
    action('/widgets/:id/feed-unhide', async (id, body) => {
      const { accountId, postId } = await ofWidget(id, body);
      await feedHide.unhide(accountId, postId);
      return `Post ${postId} is back in its account's feed.`;
    });
  }
  guarded.post('/widgets/:id/remove', c.wrap(w.remove));
}

/** An action on one widget: its outcome in words (a flash on the widget's page), or a refusal. */
type WidgetAction = (id: string, body: Record<string, unknown>) => Promise<string>;

function widgetHandlers(c: DashboardContext, deps: WidgetDeps) {
  const viewsCounted = deps.viewsBaseUrl !== undefined;
  const choices = async () =>
    (await listAccounts(deps.db, deps.clock.now())).map((a) => ({ id: a.id, username: a.username }));
  /** A refusal (bad input, unknown account or post) is a flash on the page it came from. */
  const refused = (res: Response, err: unknown, to: string) => {
    if (err instanceof WidgetInputError || err instanceof WidgetNotFoundError || err instanceof FeedHideError) {
      c.flashTo(res, { kind: 'error', text: err.message.slice(0, 400) }, to);
      return true;
    }
    return false;
  };
  /** The posts hidden from the feeds of these accounts, with their stored caption (R-OWN-17). */
  const feedHidden = async (accountIds: readonly string[]): Promise<FeedHiddenPost[]> => {
    const names = new Map((await choices()).map((a) => [a.id, a.username]));
    return Promise.all(
      (await listHiddenFeedPosts(deps.db, accountIds)).map(async (r) => ({
        accountId: r.accountId,
        postId: r.postId,
        username: names.get(r.accountId) ?? r.accountId,
        hiddenAt: r.hiddenAt.toISOString(),
        text: (await getPost(deps.db, r.accountId, r.postId))?.post.text ?? null,
      })),
    );
  };
  /** The widget named in the path, or a 404. */
  const widgetParam = async (req: Request, res: Response) => {
    try {
      return await requireWidget(deps, String(req.params.id ?? ''));
    } catch (err) {
      if (!(err instanceof WidgetNotFoundError)) throw err;
      res.status(404).type('text/plain').send('No such widget.\n');
      return null;
    }
  };

  const list: AsyncHandler = async (req, res) => {
    const [widgets, accounts, views] = await Promise.all([
      listWidgetViews(deps),
      choices(),
      widgetViewTotals(deps.db, today(deps.clock.now())),
    ]);
    c.pageHeaders(res);
    res.type('html').send(widgetsPage(widgets, accounts, views, { ...c.layoutOf(req, res), viewsCounted }));
  };

  const create: AsyncHandler = async (req, res) => {
    const body = req.body as Record<string, unknown>;
    try {
      const { widget } = await createWidget(deps, {
        name: body.name,
        layout: body.layout,
        accounts: fieldValues(body.accounts),
      });
      c.flashTo(
        res,
        { kind: 'ok', text: `Widget ${widget.name} created and published.` },
        `${WIDGETS_PATH}/${widget.id}`,
      );
    } catch (err) {
      if (!refused(res, err, WIDGETS_PATH)) throw err;
    }
  };

  const page: AsyncHandler = async (req, res) => {
    const w = await widgetParam(req, res);
    if (!w) return;
    const [accounts, posts, views, hidden] = await Promise.all([
      choices(),
      widgetCandidates(deps, w),
      widgetViewTotals(deps.db, today(deps.clock.now())),
      c.deps.feedHides ? feedHidden(w.accountIds) : Promise.resolve(null),
    ]);
    c.pageHeaders(res);
    res.type('html').send(
      widgetPage(widgetView(deps, w), accounts, posts, views.get(w.id) ?? { last7: 0, last30: 0 }, {
        ...c.layoutOf(req, res),
        viewsCounted,
        documentPath: c.previewPath(`${WIDGETS_PATH}/${w.id}/document.json`),
        feedHidden: hidden,
      }),
    );
  };

  const action =
    (fn: WidgetAction): AsyncHandler =>
    async (req, res) => {
      const w = await widgetParam(req, res);
      if (!w) return;
      const to = `${WIDGETS_PATH}/${w.id}`;
      try {
        c.flashTo(res, { kind: 'ok', text: await fn(w.id, req.body as Record<string, unknown>) }, to);
      } catch (err) {
        if (!refused(res, err, to)) throw err;
      }
    };

  const remove: AsyncHandler = async (req, res) => {
    const w = await widgetParam(req, res);
    if (!w) return;
    await removeWidget(deps, w.id);
    c.flashTo(res, { kind: 'ok', text: `Widget ${w.name} deleted with its published objects.` }, WIDGETS_PATH);
  };

  return { list, create, page, action, remove };
}
