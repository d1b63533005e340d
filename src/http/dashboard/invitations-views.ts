import { html } from '../../util/html.ts';
import type { InvitationEmailOutcome } from '../../alerts/invitation-email.ts';
import { layout, type LayoutOptions } from './layout.ts';

/** An invitation just made: the link, shown only now, and whether it was emailed to its owner. */
export function invitationPage(
  inv: { url: string; expiresAt: Date; email?: InvitationEmailOutcome | null; app?: string },
  o: LayoutOptions,
): string {
  const until = inv.expiresAt.toISOString().replace('T', ' ').slice(0, 16);
  const e = inv.email ?? null;
  const what = e?.emailed
    ? html`<p data-emailed="smtp">It was emailed to <strong>${e.to}</strong>. It works once, until ${until} UTC. The link is shown here only now, should they need it again.</p>`
    : html`<p${e ? html` data-emailed="no"` : ''}>Send this link to the account's owner${e ? ` (${e.to})` : ''}. It works once, until ${until} UTC; it is shown only now.</p>`;
  const body = html`<h1>Invitation created</h1>
${what}
${inv.app ? html`<p data-app="${inv.app}">The account connects through the app <strong>${inv.app}</strong>.</p>` : ''}
<p><input id="invitation" readonly size="90" value="${inv.url}"></p>
<p><a class="button" href="/dashboard">Back to the accounts</a></p>`;
  return layout('Invitation created', body, o);
}
