import type { WidgetDocumentAccount } from '../../schema/widget-document.ts';
import { h, link, type Tree } from './dom.ts';
import { safeUrl } from './safe.ts';

/** The header: each account's avatar, @username and a Follow link to its profile. */
export function headerTree(accounts: WidgetDocumentAccount[]): Tree {
  return h(
    'div',
    { class: 'fmw-head' },
    accounts.map((a) => {
      const url = safeUrl(a.profileUrl);
      const at = `@${a.username}`;
      return h('div', { class: 'fmw-acct' }, [
        safeUrl(a.avatarUrl) && h('img', { class: 'fmw-avatar', src: a.avatarUrl, alt: '', width: 40, height: 40 }),
        url ? link(url, 'fmw-user', [at]) : h('span', { class: 'fmw-user' }, [at]),
        url && link(url, 'fmw-follow', ['Follow'], `Follow ${at}`),
      ]);
    }),
  );
}

/**
 * Past the limit, without script: a link to the first account's profile, in the box that
 * "Load more" takes when the script runs (src/embed/script/load-more.ts), so nothing moves.
 */
export function moreTree(accounts: WidgetDocumentAccount[]): Tree | null {
  const more = accounts[0] && safeUrl(accounts[0].profileUrl);
  return more ? link(more, 'fmw-more', ['More posts']) : null;
}
