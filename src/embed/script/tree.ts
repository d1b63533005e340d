import type { WidgetDocument, WidgetOptions, WidgetPost } from '../../schema/widget-document.ts';
import { h, link, type Kid, type Style, type Tree } from './dom.ts';
import { headerTree, moreTree } from './header.ts';
import { layoutOf, mediaSizes } from './layout.ts';
import { imageSize, imgTree, placeholderOf } from './media.ts';
import { badgeOf, cardKind, shortDate, widgetAlt } from './posts.ts';
import { safeUrl } from './safe.ts';

/**
 * The widget's markup, the same on the server (widgets/<id>.html, src/embed/markup.ts) and in the
 * browser: every box sized before its image arrives (R-EMB-3), text as text (R-EMB-5).
 */
const DEFAULT_LIMIT = 12;

/** The posts shown before "Load more" (and how many each click adds). */
export function limitOf(o: Partial<WidgetOptions>): number {
  const n = Math.floor(Number(o.limit));
  return n >= 1 ? Math.min(n, 200) : DEFAULT_LIMIT;
}

export function tileTree(post: WidgetPost, doc: WidgetDocument): Tree {
  const o: Partial<WidgetOptions> = doc.options || {};
  const layout = layoutOf(doc);
  const kind = cardKind(post);
  const href = kind === 'link' ? safeUrl(post.link!.url) : safeUrl(post.url);
  const kids: Kid[] = [];
  if (kind === 'visual')
    kids.push(
      imgTree(
        post.thumbnailUrl,
        post.thumbnailSizes,
        imageSize(post, []),
        widgetAlt(post),
        (a) => mediaSizes(o, layout, a),
        placeholderOf(post.thumbnailPlaceholder),
        'fmw-img',
      ),
    );
  const body: Kid[] = [];
  const text = kind === 'link' ? post.link!.title || post.text : post.text;
  if (text && (kind !== 'visual' || o.captions !== 'hide')) body.push(h('p', { class: 'fmw-text' }, [String(text)]));
  const d = o.date !== false && shortDate(post.publishedAt);
  if (d) body.push(h('time', { class: 'fmw-date', datetime: new Date(post.publishedAt).toISOString() }, [d]));
  if (body.length) kids.push(h('div', { class: 'fmw-body' }, body));
  const badge = o.badges !== false && badgeOf(post);
  return h(
    'li',
    {
      class: `fmw-item fmw-${kind === 'visual' ? 'visual' : 'card'}`,
      'data-post-id': post.id,
      'data-account-id': post.accountId,
    },
    [
      href ? link(href, 'fmw-link', kids) : h('div', { class: 'fmw-link' }, kids),
      badge && h('span', { class: 'fmw-badge' }, [badge]),
    ],
  );
}

/** The root's custom properties: columns, radius and gap from the dashboard. */
export function rootStyle(o: Partial<WidgetOptions>): Style {
  const c: Partial<WidgetOptions['columns']> = o.columns || {};
  const num = (n: number | undefined, d: number): number => ((n as number) >= 0 ? (n as number) : d);
  return {
    '--fmw-cp': String(num(c.phone, 2)),
    '--fmw-ct': String(num(c.tablet, 3)),
    '--fmw-cd': String(num(c.desktop, 4)),
    '--fmw-r': `${num(o.radius, 8)}px`,
    '--fmw-g': `${num(o.gap, 8)}px`,
  };
}

/** The widget's markup: the server's fragment and the script's rendering alike. */
export function widgetTree(doc: WidgetDocument): Tree {
  const o: Partial<WidgetOptions> = doc.options || {};
  const layout = layoutOf(doc);
  const accounts = Array.isArray(doc.accounts) ? doc.accounts : [];
  const kids: Kid[] = [];
  if (doc.demo) kids.push(h('p', { class: 'fmw-demo' }, ['Demo feed']));
  if (o.header !== false && accounts.length) kids.push(headerTree(accounts));
  const limit = limitOf(o);
  const list = h(
    'ul',
    { class: 'fmw-list' },
    doc.posts.slice(0, limit).map((p) => tileTree(p, doc)),
  );
  kids.push(layout === 'carousel' ? h('div', { class: 'fmw-rail' }, [list]) : list);
  // Without script a link to the profile; enhance() swaps in "Load more" (same box).
  if (layout !== 'carousel' && doc.posts.length > limit) kids.push(moreTree(accounts));
  const theme = o.theme === 'light' || o.theme === 'dark' ? o.theme : 'auto';
  const captions = o.captions === 'show' || o.captions === 'hide' ? o.captions : 'hover';
  return h(
    'div',
    {
      class: `fmw fmw-w fmw--${layout} fmw--${theme} fmw-cap-${captions}`,
      'data-fmw-widget': doc.id,
      'data-stale': doc.staleSince ? doc.staleSince : null,
      style: rootStyle(o),
    },
    kids,
  );
}
