import { html, type Html } from '../../util/html.ts';
import { reasonParts, type AccountHealth } from '../../accounts/health.ts';
import { postForm, when } from './layout.ts';

/**
 * The pieces the accounts list and an account's page share: the health verdict and its reasons
 * (R-HLT-1: the same words on every surface), a held removal with its confirm button (R-OWN-7),
 * and the field that brings an action's outcome back to the page it came from.
 */

/** An account action's form field naming the page to come back to (the account's; else the list). */
export const RETURN_FIELD = 'return';
export function returnHere(from: 'list' | 'account'): Html | '' {
  return from === 'account' ? html`<input type="hidden" name="${RETURN_FIELD}" value="account">` : '';
}

/**
 * R-OWN-7: a held removal, what it would do, and the button that confirms it now (the same
 * function as `feedmirror feeds confirm-removal`). For the accounts table and the account page.
 */
export function removalHoldNotice(
  accountId: string,
  hold: { since: Date; removing: string[]; listedPosts: number; publishedPosts: number },
  csrf: string,
  from: 'list' | 'account' = 'list',
): Html {
  return html`<div class="notice removal-held" data-removal-held="${hold.removing.length}"><strong>Removal held</strong>: the last complete listing (${hold.listedPosts} posts) would remove ${hold.removing.length} of the ${hold.publishedPosts} published posts. Nothing is removed until a second listing an hour after ${when(hold.since)} agrees, or you confirm it.${postForm(`/dashboard/accounts/${encodeURIComponent(accountId)}/confirm-removal`, `Confirm: remove ${hold.removing.length} posts`, csrf, { extra: returnHere(from) })}</div>`;
}

/** The verdict as a badge (ok, warn, fail): the same words every surface uses. */
export function verdictBadge(v: AccountHealth['verdict']): Html {
  return html`<span class="verdict ${v}" data-verdict="${v}">${v}</span>`;
}

/**
 * A health reason as the dashboard shows it: plain words, each command the text names (between
 * backticks, as the terminal shows it) set as code instead of showing its backticks (R-HLT-1:
 * the same sentence on every surface).
 */
export function reasonHtml(text: string): Html {
  return html`${reasonParts(text).map((p) => (p.command ? html`<code>${p.text}</code>` : p.text))}`;
}

/** Each reason of a health, as a list item carrying its kind. */
export function reasonList(health: AccountHealth, limit = Infinity): Html | '' {
  if (health.reasons.length === 0) return '';
  const shown = health.reasons.slice(0, limit);
  const more = health.reasons.length - shown.length;
  return html`<ul class="reasons">${shown.map(
    (r) => html`<li class="${r.level}" data-reason="${r.kind}">${reasonHtml(r.text)}</li>`,
  )}${more > 0 ? html`<li class="muted">and ${more} more</li>` : ''}</ul>`;
}
