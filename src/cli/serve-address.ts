/**
 * The port `serve` listens on for a PUBLIC_URL: a plain http://host:port URL is serve itself (no
 * TLS, so no proxy in front), and serve must listen where the URL says. An https:// address, or
 * one without a port, is what a proxy exposes (443, 80): serve keeps its own PORT behind it.
 */
export function servePortOf(publicUrl: string): number | undefined {
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' || url.port === '') return undefined;
  return Number(url.port);
}
