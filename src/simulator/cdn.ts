import type { SimContext, SimRequest } from './context.ts';
import { jpegFor, mp4For } from './images.ts';
import { paddedMp4 } from './mp4.ts';
import { text, type Reply } from './reply.ts';
import type { PostRecord } from './state.ts';

/**
 * The image host: serves signed links only. A tampered link answers 403 "Bad URL hash"; a link
 * past its oe answers 403 "URL signature expired" (R-LNK-1, R-LNK-3); a deleted post's files 404.
 */

const PROFILE_SIZE = 320;

function dimensions(p: PostRecord | undefined, slot: string): { width: number; height: number } {
  if (!p || slot.startsWith('profile')) return { width: PROFILE_SIZE, height: PROFILE_SIZE };
  return { width: p.width, height: p.height };
}

/** The bundled photo a slot shows: the post's cover photo, the next ones for its slides and revisions. */
function photoOf(p: PostRecord, slot: string): number {
  const slide = Number(/^s(\d+)-/.exec(slot)?.[1] ?? 0);
  const rev = Number(/-r(\d+)$/.exec(slot)?.[1] ?? 0);
  return p.photo + slide + rev;
}

export async function handleCdn(ctx: SimContext, r: SimRequest): Promise<Reply> {
  if (r.method !== 'GET' && r.method !== 'HEAD') return text(405, 'Method not allowed');
  const v = ctx.signer.verify(r.path, r.query);
  if (v.kind === 'bad') return text(403, 'Bad URL hash');
  if (ctx.state.clock.now().getTime() >= v.expiresAtMs) return text(403, 'URL signature expired');
  const { accountId, mediaId, slot, ext } = v.target;
  let post: PostRecord | undefined;
  if (mediaId !== accountId) {
    post = ctx.state.postsById.get(mediaId);
    if (!post || post.deleted || post.accountId !== accountId) return text(404, 'Not found');
  } else if (!ctx.state.accounts.has(accountId)) {
    return text(404, 'Not found');
  }
  const headers = { 'cache-control': 'max-age=1209600, no-transform', 'access-control-allow-origin': '*' };
  if (ext === 'mp4') {
    // A real, playable MP4 (mp4.ts) at the post's size; padded to its videoBytes when it has one.
    const file = mp4For(`${mediaId}/${slot}`, dimensions(post, slot));
    const { stream, length } = post?.videoBytes
      ? paddedMp4(file, post.videoBytes)
      : { stream: file, length: file.length };
    return {
      status: 200,
      headers: { ...headers, 'content-type': 'video/mp4', 'content-length': String(length) },
      body: stream,
    };
  }
  const { width, height } = dimensions(post, slot);
  const account = ctx.state.accounts.get(accountId);
  const look =
    mediaId === accountId
      ? { avatarName: account?.name }
      : post && account?.photos
        ? { photo: photoOf(post, slot) }
        : {};
  const body = await jpegFor(`${mediaId}/${slot}`, width, height, look);
  return {
    status: 200,
    headers: { ...headers, 'content-type': 'image/jpeg', 'content-length': String(body.length) },
    body,
  };
}
