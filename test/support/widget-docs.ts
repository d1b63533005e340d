import sharp from 'sharp';
import { loadConfig } from '../../src/config.ts';
import { processImage, type VariantFormat } from '../../src/mirror/image.ts';
import {
  widgetDocumentSchema,
  type WidgetDocument,
  type WidgetLayout,
  type WidgetOptionsInput,
} from '../../src/schema/widget-document.ts';

/**
 * Widget documents (widgets/<id>.json) as tests write them to storage, built the way the
 * publisher builds a feed: 1080 px JPEGs in the platform's three shapes through the pipeline's own
 * processImage (default ladder, WebP), each image with its sizes and placeholder. The posts are
 * schema v1 posts plus accountId/username, and every document is checked against the contract
 * (widgetDocumentSchema) before a test uses it.
 */
export const SHAPES: Array<[number, number]> = [
  [1080, 1350],
  [1080, 1080],
  [1080, 608],
];

export interface MirroredImage {
  url: string;
  width: number;
  height: number;
  sizes: Array<{ url: string; width: number; height: number; mime: string }>;
  placeholder: { color: string; thumbhash: string };
}

/** Files by path (`/media/...`), to serve, and the images' published entries. */
export async function mirrorImages(
  base: string,
  count: number,
  files: Map<string, { type: string; body: Buffer }>,
  formats: VariantFormat[] = ['webp'],
): Promise<MirroredImage[]> {
  const ladder = loadConfig({}).MEDIA_VARIANT_WIDTHS;
  const out: MirroredImage[] = [];
  for (let i = 0; i < count; i++) {
    const [w, h] = SHAPES[i % SHAPES.length]!;
    const hue = (i * 67) % 360;
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}"><defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="hsl(${hue},70%,45%)"/><stop offset="1" stop-color="hsl(${(hue + 90) % 360},60%,70%)"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)"/><circle cx="${w / 2}" cy="${h / 2}" r="${h / 4}" fill="hsl(${(hue + 180) % 360},50%,50%)"/></svg>`;
    const jpeg = await sharp(Buffer.from(svg)).jpeg({ quality: 85 }).toBuffer();
    const res = await processImage(jpeg, { maxPixels: 50_000_000, variantWidths: ladder, formats });
    const stem = `/media/w/i${i}`;
    files.set(`${stem}.jpg`, { type: 'image/jpeg', body: res.original.buffer });
    const sizes = [
      ...res.variants.map((v) => {
        const file = `${stem}-w${v.width}.${v.ext}`;
        files.set(file, { type: v.contentType, body: v.buffer });
        return { url: `${base}${file}`, width: v.width, height: v.height, mime: v.contentType };
      }),
      { url: `${base}${stem}.jpg`, width: w, height: h, mime: 'image/jpeg' },
    ].sort((a, b) => a.width - b.width);
    out.push({ url: `${base}${stem}.jpg`, width: w, height: h, sizes, placeholder: res.placeholder });
  }
  return out;
}

export const ACCOUNTS = [
  { id: '17841400000000001', username: 'studio', displayName: 'Studio Example' },
  { id: '17841400000000002', username: 'atelier', displayName: 'Atelier Example' },
];

/** A caption a site must never see run as markup. */
export const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script> & "quotes"';

/**
 * Posts, newest first, from two accounts: photos, a reel whose video stays on the platform's CDN
 * (never requested: the lightbox links to the original), a video with a copy on our host
 * (playable), a carousel of three photos, a caption of hashtags only, no caption, a hostile one.
 */
export function widgetPosts(base: string, images: MirroredImage[], count: number): WidgetDocument['posts'] {
  const posts: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const img = images[i % images.length]!;
    const acct = ACCOUNTS[i % 2]!;
    const cover = {
      thumbnailUrl: img.url,
      thumbnailSizes: img.sizes,
      thumbnailPlaceholder: img.placeholder,
      aspectRatio: img.width / img.height,
    };
    const photo = { url: img.url, mime: 'image/jpeg', width: img.width, height: img.height, sizes: img.sizes };
    const common = {
      id: `p${i}`,
      source: 'instagram',
      status: 'published',
      url: `https://www.instagram.com/p/P${i}/`,
      publishedAt: new Date(Date.UTC(2026, 1, 28 - i, 9)).toISOString(),
      accountId: acct.id,
      username: acct.username,
      ...cover,
    };
    const kind = i % 7;
    if (kind === 1)
      posts.push({
        ...common,
        type: 'video',
        format: 'reel',
        text: 'Behind the scenes of the new collection. Filmed in one take #reel #studio',
        media: [{ url: 'https://cdn.platform.example/reel.mp4', mime: 'video/mp4', width: 1080, height: 1920 }],
      });
    else if (kind === 2)
      posts.push({
        ...common,
        type: 'video',
        format: 'post',
        text: 'A short clip',
        media: [{ url: `${base}/media/w/clip.mp4`, mime: 'video/mp4', width: img.width, height: img.height }],
      });
    else if (kind === 3)
      posts.push({
        ...common,
        type: 'carousel',
        format: 'post',
        text: 'Three slides from the workshop!',
        media: [0, 1, 2].map((k) => {
          const s = images[(i + k) % images.length]!;
          return { url: s.url, mime: 'image/jpeg', width: s.width, height: s.height, sizes: s.sizes };
        }),
      });
    else if (kind === 4)
      posts.push({ ...common, type: 'image', format: 'post', text: '#only #hashtags', media: [photo] });
    else if (kind === 5) posts.push({ ...common, type: 'image', format: 'post', text: '', media: [photo] });
    else if (kind === 6) posts.push({ ...common, type: 'image', format: 'post', text: HOSTILE, media: [photo] });
    else
      posts.push({
        ...common,
        type: 'image',
        format: 'post',
        text: `A sunny morning at the studio, post ${i}. Coffee, plants and a new print on the wall.`,
        media: [photo],
      });
  }
  return posts as WidgetDocument['posts'];
}

export function widgetDoc(
  base: string,
  images: MirroredImage[],
  input: {
    id: string;
    layout: WidgetLayout;
    options?: WidgetOptionsInput;
    posts?: number;
    accounts?: number;
    staleSince?: string | null;
    viewsUrl?: string | null;
  },
): WidgetDocument {
  const accounts = ACCOUNTS.slice(0, input.accounts ?? 2);
  const posts = widgetPosts(base, images, input.posts ?? 20).filter((p) => accounts.some((a) => a.id === p.accountId));
  return widgetDocumentSchema.parse({
    version: 1,
    id: input.id,
    name: `Test widget ${input.layout}`,
    generatedAt: '2026-03-01T10:00:00+00:00',
    staleSince: input.staleSince ?? null,
    demo: false,
    layout: input.layout,
    options: input.options ?? {},
    accounts: accounts.map((a) => ({
      ...a,
      profileUrl: `https://www.instagram.com/${a.username}/`,
      avatarUrl: `${base}/media/w/i${ACCOUNTS.indexOf(a)}-avatar.jpg`,
    })),
    posts,
    viewsUrl: input.viewsUrl ?? null,
  });
}
