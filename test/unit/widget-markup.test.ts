import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { widgetSource } from '../../src/embed/index.ts';
import { escapeHtml, renderWidgetFragment as fragment } from '../../src/embed/markup.ts';
import { widgetDocumentSchema, type WidgetDocument } from '../../src/schema/widget-document.ts';

/** The static fragment (widgets/<id>.html) and the alt texts, without a browser. */
const BASE = 'https://media.example';
const HOSTILE = "\"><img src=x onerror=alert(1)><script>alert(2)</script> & 'q'";

function post(i: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `p${i}`,
    source: 'instagram',
    type: 'image',
    format: 'post',
    status: 'published',
    url: `https://www.instagram.com/p/P${i}/`,
    text: `Caption ${i}. Second sentence.`,
    media: [{ url: `${BASE}/m/${i}.jpg`, mime: 'image/jpeg', width: 1080, height: 1350 }],
    thumbnailUrl: `${BASE}/m/${i}.jpg`,
    thumbnailSizes: [
      { url: `${BASE}/m/${i}-w360.webp`, width: 360, height: 450, mime: 'image/webp' },
      { url: `${BASE}/m/${i}.jpg`, width: 1080, height: 1350, mime: 'image/jpeg' },
    ],
    thumbnailPlaceholder: { color: '#aabbcc' },
    publishedAt: new Date(Date.UTC(2026, 1, 28 - i, 9)).toISOString(),
    accountId: 'a1',
    username: 'studio',
    ...extra,
  };
}

function doc(posts: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}): WidgetDocument {
  return widgetDocumentSchema.parse({
    version: 1,
    id: 'w_abcdefghij',
    name: 'Home',
    generatedAt: '2026-03-01T10:00:00+00:00',
    staleSince: null,
    demo: false,
    layout: 'grid',
    options: { limit: 2 },
    accounts: [
      {
        id: 'a1',
        username: 'studio',
        displayName: 'Studio',
        profileUrl: 'https://www.instagram.com/studio/',
        avatarUrl: `${BASE}/avatar.jpg`,
      },
    ],
    posts,
    ...extra,
  });
}

/** The fragment's markup without its stylesheet (which names every class). */
function renderWidgetFragment(d: WidgetDocument): string {
  const html = fragment(d);
  return html.slice(html.indexOf('</style>') + 8);
}

async function helpers() {
  const ctx: {
    FeedMirrorWidget?: {
      helpers: { captionAlt(t: string): string; widgetAlt(p: unknown): string; badgeOf(p: unknown): string };
    };
  } = {};
  vm.runInNewContext((await widgetSource()).toString('utf8'), ctx);
  return ctx.FeedMirrorWidget!.helpers;
}

describe('widget alt texts', () => {
  it('R-EMB-1 from the caption: hashtags stripped, first sentence, about 120 characters; none gives "Post by @user on <date>"', async () => {
    const h = await helpers();
    expect(h.captionAlt('  Sunny   morning at the studio! Coffee next. #coffee #studio')).toBe(
      'Sunny morning at the studio!',
    );
    expect(h.captionAlt('#only #tags')).toBe('');
    expect(h.captionAlt('New #print in the shop')).toBe('New in the shop');
    const long = h.captionAlt(`${'word '.repeat(60)}end`);
    expect(long.length).toBeLessThanOrEqual(121);
    expect(long.endsWith('\u2026')).toBe(true);
    expect(h.widgetAlt({ text: '', username: 'studio', publishedAt: '2026-02-03T23:30:00-02:00', media: [] })).toBe(
      'Post by @studio on Feb 4, 2026',
    );
    // The media's own alt, when a source gives one, comes first.
    expect(h.widgetAlt({ text: 'Caption.', media: [{ alt: ' A red chair ' }] })).toBe('A red chair');
  });

  it('badges from format and type (R-SCH-10)', async () => {
    const h = await helpers();
    expect(h.badgeOf({ type: 'video', format: 'reel' })).toBe('Reel');
    expect(h.badgeOf({ type: 'video', format: 'post' })).toBe('Video');
    expect(h.badgeOf({ type: 'carousel', format: 'post' })).toBe('Carousel');
    expect(h.badgeOf({ type: 'image', format: 'post' })).toBe('');
  });
});

describe('renderWidgetFragment', () => {
  it('renders the stylesheet and the first `limit` posts with sizes, srcset, placeholder and alt', () => {
    expect(fragment(doc([post(0)])).startsWith('<style id="feedmirror-widget-style">')).toBe(true);
    const html = renderWidgetFragment(doc([post(0), post(1), post(2)]));
    expect(html).toContain('<div class="fmw fmw-w fmw--grid fmw--auto fmw-cap-hover" data-fmw-widget="w_abcdefghij"');
    expect(html.match(/<li /g)).toHaveLength(2);
    expect(html).toContain(
      '<img class="fmw-img" alt="Caption 0." loading="lazy" decoding="async" width="1080" height="1350" srcset="https://media.example/m/0-w360.webp 360w, https://media.example/m/0.jpg 1080w" sizes="(max-width: 599px) 50vw, (max-width: 1023px) 34vw, 25vw" data-fmw-aspect="0.8" style="background-color:#aabbcc" src="https://media.example/m/0.jpg">',
    );
    expect(html).toContain('<time class="fmw-date" datetime="2026-02-28T09:00:00.000Z">Feb 28, 2026</time>');
    // Past the limit, without script: a link to the profile (the script makes it "Load more").
    expect(html).toContain('<a class="fmw-more" href="https://www.instagram.com/studio/"');
    expect(html).toContain('aria-label="Follow @studio"');
    expect(html).toContain('style="--fmw-cp:2;--fmw-ct:3;--fmw-cd:4;--fmw-r:8px;--fmw-g:8px"');
  });

  it('escapes every text and attribute: hostile captions, usernames and alt texts stay text (R-EMB-5)', () => {
    const html = renderWidgetFragment(
      doc([post(0, { text: HOSTILE, username: 'x"><b>' })], {
        name: HOSTILE,
        accounts: [
          {
            id: 'a1',
            username: 'st"udio<',
            displayName: HOSTILE,
            profileUrl: 'https://www.instagram.com/studio/?a="><script>',
            avatarUrl: null,
          },
        ],
      }),
    );
    expect(html).not.toMatch(/<script|<img src=x|<b>|<\/style/);
    expect(html).toContain('&lt;script&gt;alert(2)&lt;/script&gt; &amp; &#39;q&#39;');
    expect(html).toContain('alt="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('@st&quot;udio&lt;');
    expect(html).toContain('href="https://www.instagram.com/studio/?a=&quot;&gt;&lt;script&gt;"');
    expect(escapeHtml(`<>&"'`)).toBe('&lt;&gt;&amp;&quot;&#39;');
  });

  it('never writes a javascript: link; a post without caption gets "Post by @user on <date>"', () => {
    const html = renderWidgetFragment(
      doc([post(0, { text: '#tag', url: 'https://www.instagram.com/p/ok/' })], {
        accounts: [
          {
            id: 'a1',
            username: 'studio',
            displayName: 'S',
            profileUrl: 'https://www.instagram.com/s/',
            avatarUrl: null,
          },
        ],
      }),
    );
    expect(html).toContain('alt="Post by @studio on Feb 28, 2026"');
    expect(html).not.toContain('javascript:');
    expect(html).not.toContain('fmw-avatar');
  });

  it('layouts and options reach the markup: carousel rail, masonry, list sizes, dark theme, captions hidden', () => {
    const carousel = renderWidgetFragment(doc([post(0), post(1), post(2)], { layout: 'carousel' }));
    expect(carousel).toContain('<div class="fmw-rail"><ul class="fmw-list">');
    expect(carousel).not.toContain('fmw-more'); // a slider's count is its limit
    const list = renderWidgetFragment(
      doc([post(0)], { layout: 'list', options: { theme: 'dark', captions: 'hide', date: false, header: false } }),
    );
    expect(list).toContain('class="fmw fmw-w fmw--list fmw--dark fmw-cap-hide"');
    expect(list).toContain('sizes="120px"');
    expect(list).not.toContain('fmw-text');
    expect(list).not.toContain('<time');
    expect(list).not.toContain('fmw-head');
    const masonry = renderWidgetFragment(
      doc([post(0, { thumbnailSizes: undefined, aspectRatio: 1.5, media: [] })], { layout: 'masonry' }),
    );
    expect(masonry).toContain('width="1080" height="720"');
    expect(masonry).not.toContain('data-stale');
  });
});
