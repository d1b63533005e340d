/** Plain HTML pages for people (login results, errors). Everything interpolated is escaped. */
export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}

export function page(title: string, paragraphs: string[], opts: { retryUrl?: string } = {}): string {
  const body = paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n    ');
  const retry = opts.retryUrl ? `\n    <p><a href="${escapeHtml(opts.retryUrl)}">Connect again</a></p>` : '';
  return `<!doctype html>
<html lang="en">
  <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)} · feedmirror</title>
  <style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}</style></head>
  <body>
    <h1>${escapeHtml(title)}</h1>
    ${body}${retry}
  </body>
</html>
`;
}
