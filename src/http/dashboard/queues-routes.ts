import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { requireSameOrigin } from '../csrf.ts';
import { DASHBOARD_PATH } from '../auth/paths.ts';
import type { DashboardContext, DashboardQueues } from './context.ts';

/**
 * bull-board at /dashboard/queues: its UI and its API, behind the dashboard's session. Its
 * POST/PUT/DELETE calls (retry, clean, promote...) come from its own fetch calls, which cannot
 * carry our form token: they must come from this origin (Sec-Fetch-Site / Origin), and the
 * SameSite=Strict cookie keeps other sites out as well.
 */
export const BULL_BOARD_PATH = `${DASHBOARD_PATH}/queues`;

export function registerQueueRoutes(guarded: Router, c: DashboardContext): void {
  guarded.use(
    '/queues',
    withoutWebFonts,
    requireSameOrigin(c.deps.auth.allowedOrigins),
    bullBoardRouter(c.deps.queues),
  );
}

/** bull-board with feedmirror's queues; its UI calls its own API under the same base path. */
function bullBoardRouter(queues: DashboardQueues): express.Express {
  const serverAdapter = new ExpressAdapter().setBasePath(BULL_BOARD_PATH);
  const list = [
    queues.tokenRefresh,
    queues.feedSync,
    queues.mirrorMedia,
    queues.publishFeed,
    queues.maintenance,
    queues.webhooks,
  ].filter((q): q is Queue => q !== undefined);
  createBullBoard({
    queues: list.map((q) => new BullMQAdapter(q)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'feedmirror queues', miscLinks: [{ text: 'Accounts', url: DASHBOARD_PATH }] } },
  });
  return serverAdapter.getRouter() as express.Express;
}

/**
 * Security headers (CSP without inline script, frame-ancestors 'none', nosniff) come from the
 * app-wide helmet (security-headers.ts); bull-board's UI is script files only. Its page links web
 * fonts on a public CDN: without internet (and under our CSP) that is a failed request in every
 * console, so its page is rendered without the link; the UI falls back to the system fonts.
 */
function withoutWebFonts(_req: Request, res: Response, next: NextFunction): void {
  res.set('Cache-Control', 'no-store');
  const render = res.render.bind(res) as (
    view: string,
    options: object,
    cb: (err: Error | null, html?: string) => void,
  ) => void;
  (res as { render: unknown }).render = (view: string, options: object = {}) =>
    render(view, options, (err, html) => (err ? next(err) : res.type('html').send(stripWebFonts(html ?? ''))));
  next();
}

/** bull-board's HTML without its links to a web-font CDN (nothing of the page may need the internet). */
function stripWebFonts(html: string): string {
  return html
    .replace(/<link[^>]+href="https:\/\/fonts\.(?:googleapis|gstatic)\.com[^"]*"[^>]*>\s*/g, '')
    .replace(/<link[^>]+rel="preconnect"[^>]+fonts\.(?:googleapis|gstatic)\.com[^>]*>\s*/g, '');
}
