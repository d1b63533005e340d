import { html, join } from '../../util/html.ts';
import { WIDGET_LAYOUTS, type WidgetLayout } from '../../schema/widget-document.ts';
import { layout, type LayoutOptions } from './layout.ts';

/** The layouts a preview can be shown in: a widget's. */
export const PREVIEW_LAYOUTS = WIDGET_LAYOUTS;
export type PreviewLayout = WidgetLayout;

/** The id the preview's document carries (a widget id in form; no widget has it in storage). */
export const PREVIEW_WIDGET_ID = 'w_preview222';

/**
 * The feed of one account as a site shows it: the published widget script (the dashboard's copy,
 * /dashboard/widget.js) rendering a widget document of this account alone with the default
 * options, built from the published feed by the function that publishes every widget.
 */
export function previewPage(
  a: { id: string; username: string },
  o: LayoutOptions & {
    layout: PreviewLayout;
    warnings: string[];
    /** Where the script reads the document (a signed address: the script sends no cookie). */
    documentPath: string;
    widgetsUrl?: string | undefined;
  },
): string {
  const feedPath = `/feeds/${encodeURIComponent(a.id)}.json`;
  const base = `/dashboard/accounts/${encodeURIComponent(a.id)}/preview`;
  const warnings = o.warnings.map((w) => html`<p class="notice">${w}</p>`);
  const layouts = PREVIEW_LAYOUTS.map((l) =>
    l === o.layout ? html`<strong>${l}</strong>` : html`<a href="${base}?layout=${l}">${l}</a>`,
  );
  const body = html`<h1>Feed preview: @${a.username}</h1>
<p class="muted">As a site shows a widget of @${a.username} alone with the default options: the widget script rendering a widget document built from the published feed (<a href="${feedPath}">${feedPath}</a>). ${o.widgetsUrl ? html`A widget's own layout, options and hidden posts are set on its page under <a href="${o.widgetsUrl}">Widgets</a>.` : ''}</p>
<p class="muted">Layout: ${join(layouts, ' · ')}</p>
${warnings}
<div class="widget-preview">
<div id="feed" data-feedmirror-widget="${PREVIEW_WIDGET_ID}" data-src="${o.documentPath}"></div>
</div>
<script defer src="/dashboard/widget.js"></script>`;
  return layout(`Preview @${a.username}`, body, o);
}
