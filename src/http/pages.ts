/**
 * Escaping for every page of ours. The pages an account owner sees are in ./owner-pages.ts
 * (branded); the dashboard's in ./dashboard/.
 */
export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}
