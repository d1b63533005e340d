import type { WidgetDocument } from '../../schema/widget-document.ts';
import { safeUrl } from './safe.ts';

/** The view counter: widgets already counted on this page. */
const counted: Record<string, 1> = {};

/**
 * R-EMB-4: one view per widget per page load: no cookies, no referrer (fetch with keepalive:
 * navigator.sendBeacon always sends cookies).
 */
export function countView(doc: WidgetDocument): void {
  const url = safeUrl(doc.viewsUrl);
  if (!url || counted[doc.id]) return;
  counted[doc.id] = 1;
  try {
    fetch(url, {
      method: 'POST',
      mode: 'no-cors',
      credentials: 'omit',
      keepalive: true,
      referrerPolicy: 'no-referrer',
    }).catch(() => {});
  } catch {
    /* views are best effort */
  }
}
