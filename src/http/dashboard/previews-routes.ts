import { Router, type Request, type Response } from 'express';
import { getAccount } from '../../store/accounts.ts';
import { widgetSource, WIDGET_CONTENT_TYPE } from '../../embed/index.ts';
import { buildWidgetDocument } from '../../widgets/publish.ts';
import { DASHBOARD_PATH } from '../auth/paths.ts';
import { ACCOUNT_ID_RE, type AsyncHandler, type DashboardContext } from './context.ts';
import { requirePreviewSignature } from './preview-links.ts';
import { previewPage, PREVIEW_LAYOUTS, PREVIEW_WIDGET_ID, type PreviewLayout } from './preview-views.ts';
import { widgetPreviewDocument } from './widgets-routes.ts';

/**
 * Previews: an account's feed as a widget shows it (its page, and the document the widget script
 * reads), and the dashboard's copy of the widget script. The script fetches documents without
 * cookies, so a preview page hands it a signed address (preview-links.ts): previewDocuments()
 * serves those ahead of the login; unsigned, the same paths need the session.
 */
export function registerPreviewRoutes(guarded: Router, c: DashboardContext): void {
  guarded.get('/widget.js', c.wrap(widgetScript));
  guarded.get('/accounts/:id/preview', c.wrap(accountPreview(c)));
  guarded.get('/accounts/:id/preview/document.json', c.wrap(accountPreviewDocument(c)));
}

/** The previews' documents at their signed addresses (mounted at /dashboard before the session check). */
export function previewDocuments(c: DashboardContext): Router {
  const router = Router();
  const key = c.deps.auth.sessionKey;
  router.get('/accounts/:id/preview/document.json', requirePreviewSignature(key), c.wrap(accountPreviewDocument(c)));
  if (c.deps.widgets)
    router.get(
      '/widgets/:id/document.json',
      requirePreviewSignature(key),
      c.wrap(widgetPreviewDocument(c.deps.widgets)),
    );
  return router;
}

const previewLayout = (v: unknown): PreviewLayout =>
  (PREVIEW_LAYOUTS as readonly unknown[]).includes(v) ? (v as PreviewLayout) : 'grid';

async function widgetScript(_req: Request, res: Response): Promise<void> {
  res
    .set({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' })
    .type(WIDGET_CONTENT_TYPE)
    .send(await widgetSource());
}

function accountPreview(c: DashboardContext): AsyncHandler {
  return async (req, res) => {
    const account = await c.accountParam(req, res);
    if (!account) return;
    const layout = previewLayout(req.query.layout);
    c.pageHeaders(res);
    res.type('html').send(
      previewPage(account, {
        ...c.layoutOf(req, res),
        layout,
        warnings: c.storageWarnings(),
        widgetsUrl: c.deps.widgets ? `${DASHBOARD_PATH}/widgets` : undefined,
        documentPath: c.previewPath(
          `${DASHBOARD_PATH}/accounts/${encodeURIComponent(account.id)}/preview/document.json`,
          {
            layout,
          },
        ),
      }),
    );
  };
}

/**
 * The account preview's document: this account alone in a widget with the default options,
 * built by the function that publishes every widget (R-WID-1, R-WID-2), without a views address.
 */
function accountPreviewDocument(c: DashboardContext): AsyncHandler {
  const { db, storage, clock } = c.deps;
  return async (req, res) => {
    const id = String(req.params.id ?? '');
    const account = ACCOUNT_ID_RE.test(id) ? await getAccount(db, id) : null;
    if (!account || !storage) {
      res
        .status(404)
        .type('text/plain')
        .send(account ? 'No storage to read the feed from.\n' : 'No such account.\n');
      return;
    }
    const now = clock.now();
    const doc = await buildWidgetDocument(
      { db, storage, clock },
      {
        id: PREVIEW_WIDGET_ID,
        name: `@${account.username}`,
        layout: previewLayout(req.query.layout),
        options: {},
        createdAt: now,
        updatedAt: now,
        accountIds: [account.id],
        hiddenPostIds: [],
        publishedHash: null,
        publishedAt: null,
        publishedAccounts: [],
      },
    );
    res.set('Cache-Control', 'no-store').json(doc);
  };
}
