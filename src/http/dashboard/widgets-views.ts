import { html, join, type Html } from '../../util/html.ts';
import { WIDGET_CAPTIONS, WIDGET_FILTER_TYPES, WIDGET_LAYOUTS, WIDGET_THEMES } from '../../schema/widget-document.ts';
import type { WidgetCandidate, WidgetView } from '../../widgets/widgets.ts';
import { csrfField, layout, postForm, type LayoutOptions } from './layout.ts';

/**
 * The widgets pages of the dashboard: the list (with views over 7 and 30 days) and the create
 * form; one widget's edit form beside its live preview (the published script rendering the
 * widget's published document), its embed snippet with a copy button, the posts of its accounts
 * with Hide/Unhide, and Delete. Server-rendered like the rest (layout.ts), every action a POST
 * form with the session's CSRF token; the only script is ours, from a file (the CSP).
 */
export const WIDGETS_PATH = '/dashboard/widgets';

export interface AccountChoice {
  id: string;
  username: string;
}

/** A post hidden from its account's feed (R-OWN-17), as the widget page lists it. */
export interface FeedHiddenPost {
  accountId: string;
  postId: string;
  username: string;
  hiddenAt: string;
  /** Its stored caption, when the post is still stored. */
  text: string | null;
}

export interface ViewCounts {
  last7: number;
  last30: number;
}

const options = (values: readonly string[], selected: string) =>
  values.map((v) => html`<option value="${v}"${v === selected ? ' selected' : ''}>${v}</option>`);

function accountBoxes(accounts: AccountChoice[], chosen: readonly string[]): Html {
  if (accounts.length === 0) return html`<p class="muted">No account is connected yet.</p>`;
  return join(
    accounts.map(
      (a) =>
        html`<label><input type="checkbox" name="accounts" value="${a.id}"${chosen.includes(a.id) ? ' checked' : ''}> @${a.username}</label>`,
    ),
    ' ',
  );
}

export function widgetsPage(
  widgets: WidgetView[],
  accounts: AccountChoice[],
  views: ReadonlyMap<string, ViewCounts>,
  o: LayoutOptions & { viewsCounted: boolean },
): string {
  const names = new Map(accounts.map((a) => [a.id, a.username]));
  const rows = widgets.map((w) => {
    const v = views.get(w.id) ?? { last7: 0, last30: 0 };
    const merged = w.accounts.map((id) => `@${names.get(id) ?? id}`);
    return html`<tr data-widget-id="${w.id}"><td><a href="${WIDGETS_PATH}/${w.id}">${w.name}</a><br><code>${w.id}</code></td>
<td>${w.layout}</td><td>${merged.length ? join(merged, html`<br>`) : html`<span class="muted">none</span>`}</td>
<td data-views-7="${v.last7}" data-views-30="${v.last30}">${o.viewsCounted ? html`${v.last7} <small class="muted">/ 7 days</small><br>${v.last30} <small class="muted">/ 30 days</small>` : html`<span class="muted">not counted</span>`}</td></tr>`;
  });
  const body = html`<h1>Widgets</h1>
<p class="muted">A widget shows the posts of one or more accounts, merged newest first, in the layout chosen here. Sites embed it by its id; a change here reaches them on their next page load.${o.viewsCounted ? '' : ' Views are not counted: set WIDGET_VIEWS_URL to this server’s public address to count them.'}</p>
${widgets.length ? html`<table><thead><tr><th>Widget</th><th>Layout</th><th>Accounts</th><th>Views</th></tr></thead><tbody>${join(rows, '\n')}</tbody></table>` : html`<p>No widget yet.</p>`}
<h2>New widget</h2>
<form method="post" action="${WIDGETS_PATH}" class="widget-form">${csrfField(o.csrf)}
<p><label>Name <input name="name" required maxlength="100"></label></p>
<p><label>Layout <select name="layout">${options(WIDGET_LAYOUTS, 'grid')}</select></label></p>
<fieldset><legend>Accounts</legend>${accountBoxes(accounts, accounts.length === 1 ? [accounts[0]!.id] : [])}</fieldset>
<p><button type="submit" class="primary">Create widget</button></p></form>`;
  return layout('Widgets', body, o);
}

function check(name: string, label: string, on: boolean): Html {
  return html`<label><input type="checkbox" name="${name}" value="on"${on ? ' checked' : ''}> ${label}</label>`;
}

function num(name: string, label: string, value: number, min: number, max: number): Html {
  return html`<label>${label} <input type="number" name="${name}" value="${value}" min="${min}" max="${max}" required></label>`;
}

/** The settings form: name, layout, look, accounts, counts, filters. */
function editForm(w: WidgetView, accounts: AccountChoice[], base: string, csrf: string): Html {
  const op = w.options;
  const typeBoxes = WIDGET_FILTER_TYPES.map(
    (t) =>
      html`<label><input type="checkbox" name="types" value="${t}"${op.filters.types.includes(t) ? ' checked' : ''}> ${t}</label>`,
  );
  return html`<form method="post" action="${base}" class="widget-form">${csrfField(csrf)}
<p><label>Name <input name="name" value="${w.name}" required maxlength="100"></label></p>
<p><label>Layout <select name="layout">${options(WIDGET_LAYOUTS, w.layout)}</select></label>
<label>Theme <select name="theme">${options(WIDGET_THEMES, op.theme)}</select></label>
<label>Captions <select name="captions">${options(WIDGET_CAPTIONS, op.captions)}</select></label></p>
<fieldset><legend>Accounts</legend>${accountBoxes(accounts, w.accounts)}</fieldset>
<p>${num('limit', 'Shown before “Load more”', op.limit, 1, 200)} ${num('maxPosts', 'At most', op.maxPosts, 1, 200)}</p>
<p>Columns: ${num('columnsPhone', 'phone', op.columns.phone, 1, 8)} ${num('columnsTablet', 'tablet', op.columns.tablet, 1, 8)} ${num('columnsDesktop', 'desktop', op.columns.desktop, 1, 8)}</p>
<p>${num('radius', 'Corner radius (px)', op.radius, 0, 48)} ${num('gap', 'Gap (px)', op.gap, 0, 64)}</p>
<p>${check('header', 'Header (avatar, username, follow link)', op.header)} ${check('date', 'Dates', op.date)} ${check('badges', 'Post-type badges', op.badges)}</p>
<fieldset><legend>Filters</legend><p>Types (none = all): ${join(typeBoxes, ' ')}</p>
<p><label>Only with one of these hashtags <input name="includeTags" value="${op.filters.includeTags.join(' ')}" placeholder="sale new"></label></p>
<p><label>Never with these hashtags <input name="excludeTags" value="${op.filters.excludeTags.join(' ')}" placeholder="ad"></label></p></fieldset>
<p><button type="submit" class="primary">Save and publish</button></p></form>`;
}

/** A post of the widget's accounts: shown, hidden or filtered out, with Hide/Unhide (and Hide from the feed). */
function postRow(p: WidgetCandidate, base: string, o: { csrf: string; feedHidden?: FeedHiddenPost[] | null }): Html {
  const state = p.hidden
    ? html`<span class="bad">hidden</span>`
    : p.filtered
      ? html`<span class="muted">filtered out</span>`
      : html`<span class="ok">shown</span>`;
  const postField = html`<input type="hidden" name="postId" value="${p.id}">`;
  const action = p.hidden
    ? postForm(`${base}/unhide`, 'Unhide', o.csrf, { extra: postField })
    : postForm(`${base}/hide`, 'Hide', o.csrf, { extra: postField });
  // From the account's feed: every widget and every site reading the feed (R-OWN-17).
  const feedAction = o.feedHidden
    ? postForm(`${base}/feed-hide`, 'Hide from the feed', o.csrf, {
        extra: html`${postField}<input type="hidden" name="accountId" value="${p.accountId}">`,
      })
    : '';
  const thumb = p.thumbnailUrl ? html`<img src="${p.thumbnailUrl}" alt="" width="48" height="48" loading="lazy">` : '';
  return html`<tr data-post-id="${p.id}"><td>${thumb}</td><td><a href="${p.url}" rel="noopener">${p.text.slice(0, 80) || '(no caption)'}</a><br><small>@${p.username} · ${p.publishedAt.slice(0, 10)} · ${p.type}</small></td><td>${state}</td><td class="actions">${action}${feedAction}</td></tr>`;
}

export function widgetPage(
  w: WidgetView,
  accounts: AccountChoice[],
  posts: WidgetCandidate[],
  views: ViewCounts,
  o: LayoutOptions & { viewsCounted: boolean; documentPath: string; feedHidden?: FeedHiddenPost[] | null },
): string {
  const base = `${WIDGETS_PATH}/${encodeURIComponent(w.id)}`;
  const body = html`<h1>Widget: ${w.name}</h1>
<p class="muted"><code>${w.id}</code> · document <a href="${w.documentUrl}">${w.documentUrl}</a> · static HTML <a href="${w.fragmentUrl}">${w.fragmentUrl}</a>${o.viewsCounted ? html` · <span data-views-7="${views.last7}">${views.last7} views in 7 days</span>, ${views.last30} in 30` : ''}</p>
<h2>Embed</h2>
<p>Paste this where the widget should appear. Layout and options come from here, so the page never changes again.</p>
<pre id="embed-snippet">${w.embed}</pre>
<p><button type="button" id="copy-embed" data-copy="embed-snippet">Copy the snippet</button> <span id="copy-status" role="status"></span></p>
<div class="widget-edit">
<section><h2>Settings</h2>${editForm(w, accounts, base, o.csrf)}</section>
<section><h2>Preview</h2><p class="muted">The published widget, as sites show it.</p>
<div class="widget-preview"><div data-feedmirror-widget="${w.id}" data-src="${o.documentPath}"></div></div></section>
</div>
<h2>Posts</h2>
<p class="muted">Every post of its accounts, newest first. A hidden post stays hidden through re-syncs and reconnects.</p>
${
  posts.length
    ? html`<table><thead><tr><th></th><th>Post</th><th>In the widget</th><th></th></tr></thead><tbody>${join(
        posts.map((p) => postRow(p, base, o)),
        '\n',
      )}</tbody></table>`
    : html`<p class="muted">No posts published yet.</p>`
}
${feedHiddenSection(base, o)}
<h2>Delete</h2>
<p>Sites embedding it then show nothing.</p>
${postForm(`${base}/remove`, `Delete ${w.name}`, o.csrf, { cls: 'danger' })}
<script defer src="/dashboard/widget.js"></script><script defer src="${WIDGETS_PATH}/copy.js"></script>`;
  return layout(`Widget ${w.name}`, body, o);
}

/** The posts hidden from the feeds of the widget's accounts, each with "Show in the feed". */
function feedHiddenSection(base: string, o: LayoutOptions & { feedHidden?: FeedHiddenPost[] | null }): Html | '' {
  if (!o.feedHidden) return '';
  const rows = o.feedHidden.map(
    (p) =>
      html`<tr data-feed-hidden="${p.postId}"><td>${p.text?.slice(0, 80) || '(no caption)'}<br><small>@${p.username} · ${p.postId} · hidden ${p.hiddenAt.slice(0, 10)}</small></td><td class="actions">${postForm(
        `${base}/feed-unhide`,
        'Show in the feed',
        o.csrf,
        {
          extra: html`<input type="hidden" name="postId" value="${p.postId}"><input type="hidden" name="accountId" value="${p.accountId}">`,
        },
      )}</td></tr>`,
  );
  return html`<h2>Hidden from the feed</h2>
<p class="muted">“Hide” leaves a post out of this widget only. “Hide from the feed” leaves it out of its account’s published feed, so out of every widget and every site reading the feed; the post stays stored, synced and copied, and comes back as it is with “Show in the feed”.</p>
${rows.length ? html`<table><thead><tr><th>Post</th><th></th></tr></thead><tbody>${join(rows, '\n')}</tbody></table>` : html`<p class="muted">No post of these accounts is hidden from its feed.</p>`}`;
}

/** The copy button's script (a file: the CSP allows no inline script). */
export const COPY_SCRIPT = `document.addEventListener('click', function (e) {
  var b = e.target.closest && e.target.closest('[data-copy]');
  if (!b) return;
  var text = document.getElementById(b.getAttribute('data-copy')).textContent;
  var status = document.getElementById('copy-status');
  navigator.clipboard.writeText(text).then(
    function () { status.textContent = 'Copied.'; },
    function () { status.textContent = 'Select the snippet and copy it.'; }
  );
});
`;
