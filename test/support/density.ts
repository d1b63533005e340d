import type { Browser, Route } from 'playwright-core';

/**
 * How many image pixels the widget's images carry per device pixel they fill, measured in a real
 * browser. For each loaded image: the resource's own pixel size (loaded again without
 * srcset, because naturalWidth of a srcset image is divided by the candidate's density) against
 * its box times devicePixelRatio. A cropped image (object-fit: cover) fills its box along its
 * shorter side, so the ratio is the smaller of the two axes: 1.0 is exact, 2.0 is twice too many.
 *
 * Before any image is let through, each image's painted background colour is read, to show the
 * placeholder is there before the image loads.
 */
export interface DensityReport {
  /** One per loaded widget image. */
  ratios: number[];
  median: number;
  /** Per image: the colour its feed entry asks for and the colour painted while it was held. */
  placeholders: Array<{ expected: string | null; painted: string; complete: boolean }>;
  /** The resources the images ended up showing (currentSrc). */
  sources: string[];
}

const IMAGE_RE = /\.(jpe?g|png|webp|avif)(\?|$)/i;

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** `#rrggbb` as getComputedStyle writes it. */
export function cssRgb(hex: string): string {
  const n = (i: number) => parseInt(hex.slice(i, i + 2), 16);
  return `rgb(${n(1)}, ${n(3)}, ${n(5)})`;
}

export async function measureDensity(
  browser: Browser,
  url: string,
  viewport: { width: number; height: number; dpr: number },
): Promise<DensityReport> {
  const context = await browser.newContext({
    viewport: { width: viewport.width, height: viewport.height },
    deviceScaleFactor: viewport.dpr,
  });
  const held: Route[] = [];
  let holding = true;
  await context.route(
    (u) => IMAGE_RE.test(u.pathname),
    (route) => {
      if (holding) held.push(route);
      else void route.continue();
    },
  );
  const page = await context.newPage();
  try {
    await page.goto(url);
    await page.waitForFunction(() => {
      const nodes = [...document.querySelectorAll('[data-feedmirror-feed], [data-feedmirror-widget]')];
      return nodes.length > 0 && nodes.every((n) => n.getAttribute('data-feedmirror-state') === 'ready');
    });
    // The placeholder colours the feed (or the widget document: named by data-src, else
    // ../widgets/<id>.json beside the script, as the script finds it) asks for, by post id.
    const feedUrl = await page.evaluate(() => {
      const n = document.querySelector('[data-feedmirror-feed], [data-feedmirror-widget]')!;
      const named = n.getAttribute('data-feedmirror-feed') ?? n.getAttribute('data-src');
      if (named) return new URL(named, location.href).href;
      const script = document.querySelector<HTMLScriptElement>('script[src*="feedmirror-widget"]')!;
      return new URL(`../widgets/${n.getAttribute('data-feedmirror-widget')}.json`, script.src).href;
    });
    const feed = (await (await context.request.get(feedUrl)).json()) as {
      posts: Array<{ id: string; thumbnailPlaceholder?: { color?: string } }>;
    };
    const wanted = new Map(feed.posts.map((p) => [p.id, p.thumbnailPlaceholder?.color ?? null]));
    // Images are held: nothing has loaded, what shows is the placeholder.
    const painted = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLImageElement>('[data-feedmirror-state] img.fmw-img')].map((img) => ({
        id: img.closest('li')?.getAttribute('data-post-id') ?? '',
        painted: getComputedStyle(img).backgroundColor,
        complete: img.complete && img.naturalWidth > 0,
      })),
    );
    const placeholders = painted.map((p) => ({
      expected: wanted.get(p.id) ?? null,
      painted: p.painted,
      complete: p.complete,
    }));

    holding = false;
    for (const r of held.splice(0)) await r.continue();
    await page.waitForFunction(() => {
      const imgs = [...document.querySelectorAll<HTMLImageElement>('[data-feedmirror-state] img.fmw-img')];
      const inView = imgs.filter((i) => i.getBoundingClientRect().top < innerHeight);
      return inView.length > 0 && inView.every((i) => i.complete && i.naturalWidth > 0);
    });
    const measured = await page.evaluate(async () => {
      const dpr = devicePixelRatio;
      const out: Array<{ ratio: number; src: string }> = [];
      for (const img of document.querySelectorAll<HTMLImageElement>('[data-feedmirror-state] img.fmw-img')) {
        if (!img.complete || img.naturalWidth === 0) continue;
        const probe = new Image();
        probe.src = img.currentSrc;
        await probe.decode();
        const box = img.getBoundingClientRect();
        out.push({
          ratio: Math.min(probe.naturalWidth / (box.width * dpr), probe.naturalHeight / (box.height * dpr)),
          src: img.currentSrc,
        });
      }
      return out;
    });
    const ratios = measured.map((m) => m.ratio);
    return { ratios, median: median(ratios), placeholders, sources: measured.map((m) => m.src) };
  } finally {
    await context.close();
  }
}
