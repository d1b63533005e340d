import { createHash, randomBytes } from 'node:crypto';
import { DAY, HOUR, type ManualClock } from '../util/clock.ts';
import { SCOPE } from '../platform/identifiers.ts';
import { coverPhoto, photoForCaption, photoNumber } from './photos.ts';
import type {
  AccountType,
  DroppableField,
  EndlessPaging,
  PostKind,
  PostSpec,
  SimAccount,
  SimAccountOptions,
  SimPost,
  SimSlide,
  SlideKind,
} from './types.ts';

/**
 * Everything the fake platform knows: accounts, their posts, tokens and login codes. Pure state,
 * no HTTP; every "now" is the simulator's ManualClock.
 */

export const SHORT_LIVED_MS = HOUR;
export const LONG_LIVED_MS = 60 * DAY;
export const MIN_REFRESH_AGE_MS = DAY;
export const CODE_LIFETIME_MS = HOUR;

export interface AccountRecord {
  id: string;
  username: string;
  name: string;
  accountType: AccountType;
  refuseFields: Set<DroppableField>;
  omitFields: Set<DroppableField>;
  tester: boolean;
  profilePicture: boolean;
  /** Its pictures are bundled photographs rather than generated scenes (SimAccountOptions.photos). */
  photos: boolean;
}

export interface PostRecord {
  id: string;
  accountId: string;
  /** Insertion order: breaks timestamp ties (newer first). */
  seq: number;
  /**
   * A photo account's post: the bundled photo number of its cover (its slides take the next
   * ones): the photo its given caption talks about, else the next in turn (photos.ts).
   */
  photo: number;
  kind: PostKind;
  caption: string | null;
  likeCount: number | null;
  commentsCount: number | null;
  slides: SimSlide[];
  width: number;
  height: number;
  timestamp: Date;
  shortcode: string;
  /** Bumped when what the images show changes, so links and bytes change with it. */
  rev: number;
  /** Links in listings are signed at this moment (creation or last visual change); see media.ts. */
  signedAt: Date;
  isSharedToFeed: boolean;
  deleted: boolean;
  /** Links without `oe` (PostSpec.linksWithoutOe). */
  linksWithoutOe: boolean;
  /** PostSpec.videoBytes: the size its video files are served at; null: the bare MP4. */
  videoBytes: number | null;
  /** How listings and reads garble it (PostSpec.glitch). */
  glitch: 'unknown-media-type' | 'no-timestamp' | null;
}

export type TokenKind = 'short' | 'long';
export interface TokenRecord {
  accountId: string;
  kind: TokenKind;
  issuedAt: Date;
  expiresAt: Date;
  scopes: string[];
  /** Set for tokens alive when the password changed (190/460) or tokens were revoked (190/467). */
  invalidated?: 'password' | 'revoked';
  /** The app that obtained it: only that app's secret exchanges it, and its calls count against that app. */
  appId: string;
}

/** An app registered with the platform: its secret, and whether the platform restricted it. */
export interface SimApp {
  appId: string;
  secret: string;
  restricted: boolean;
}

export interface CodeRecord {
  accountId: string;
  clientId: string;
  redirectUri: string;
  scopes: string[];
  expiresAt: Date;
  used: boolean;
}

/** Default picture sizes when a spec names none: portrait, square, landscape, small portrait. */
const DEFAULT_SIZES: ReadonlyArray<readonly [number, number]> = [
  [1080, 1350],
  [1080, 1080],
  [1080, 608],
  [640, 800],
];

const MIX: readonly PostSpec[] = [
  { kind: 'image', caption: 'Morning light over the harbour #sunrise' },
  { kind: 'reel', caption: 'Behind the scenes 🎬' },
  { kind: 'carousel', caption: 'Three from the weekend', slides: ['image', 'video', 'image'] },
  { kind: 'video', caption: 'A short walk through the market' },
  { kind: 'image', caption: null, likeCount: null, commentsCount: null },
  { kind: 'copyright', caption: 'Dancing to a song we may not show' },
  { kind: 'carousel', caption: 'Slides with a missing photo', slides: ['image', 'image-no-url', 'video'] },
  { kind: 'image', caption: 'Line one\nLine two — with “quotes” & <tags> #feed @friend' },
  { kind: 'carousel', caption: 'Two photos', slides: ['image', 'image'] },
  { kind: 'reel', caption: null, likeCount: 0, commentsCount: 0 },
];
/** The number of posts that covers every shape the simulator knows. */
export const MIX_SIZE = MIX.length;

export function hashInt(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}

export function randomToken(prefix: string, bytes = 40): string {
  return prefix + randomBytes(bytes).toString('base64url');
}

export class SimState {
  readonly accounts = new Map<string, AccountRecord>();
  /** Every post ever added, deleted ones included (their links answer 404). */
  readonly postsById = new Map<string, PostRecord>();
  /** Carousel slide id -> its post. */
  readonly slideParent = new Map<string, PostRecord>();
  readonly tokens = new Map<string, TokenRecord>();
  readonly codes = new Map<string, CodeRecord>();
  /** Posts of each account (deleted ones included): a listing reads its own, not every post (10,000-account runs). */
  private readonly postsOfAccount = new Map<string, PostRecord[]>();
  private readonly usernames = new Set<string>();
  private accountSeq = 0;
  private mediaSeq = 0;
  private postSeq = 0;

  constructor(
    readonly clock: ManualClock,
    private readonly baseUrl: () => string,
    private readonly onSecret: (s: string) => void,
  ) {}

  // ---- accounts ----

  createAccount(opts: SimAccountOptions = {}): SimAccount {
    this.accountSeq += 1;
    const id = (17841400000000000n + BigInt(this.accountSeq)).toString();
    const username = opts.username ?? `sim_account_${this.accountSeq}`;
    if (!/^[A-Za-z0-9._]{1,30}$/.test(username)) throw new Error(`simulator: invalid username '${username}'`);
    if (this.usernames.has(username)) throw new Error(`simulator: username '${username}' is taken`);
    this.usernames.add(username);
    this.accounts.set(id, {
      id,
      username,
      name: opts.name ?? `Sim Account ${this.accountSeq}`,
      accountType: opts.accountType ?? 'BUSINESS',
      refuseFields: new Set(opts.refuseFields ?? []),
      omitFields: new Set(opts.omitFields ?? []),
      tester: opts.tester ?? true,
      profilePicture: opts.profilePicture ?? true,
      photos: opts.photos ?? false,
    });
    const posts = opts.posts ?? 0;
    if (typeof posts === 'number') {
      // Oldest first, so the newest ends up first; every 7 hours back from now.
      const now = this.clock.now().getTime();
      for (let i = posts - 1; i >= 0; i--) {
        const base = MIX[i % MIX.length] as PostSpec;
        this.addPost(id, { ...base, timestamp: new Date(now - (i + 1) * 7 * HOUR) });
      }
    } else {
      for (const spec of [...posts].reverse()) this.addPost(id, spec);
    }
    return { id, username };
  }

  account(accountId: string): AccountRecord {
    const a = this.accounts.get(accountId);
    if (!a) throw new Error(`simulator: no account ${accountId}`);
    return a;
  }

  // ---- posts ----

  private nextMediaId(): string {
    this.mediaSeq += 1;
    return (17900000000000000n + BigInt(this.mediaSeq)).toString();
  }

  addPost(accountId: string, spec: PostSpec): string {
    const account = this.account(accountId);
    validateSpec(spec);
    const id = this.nextMediaId();
    this.postSeq += 1;
    const h = hashInt(id);
    const [dw, dh] = DEFAULT_SIZES[h % DEFAULT_SIZES.length] as readonly [number, number];
    const now = this.clock.now();
    const slides: SimSlide[] =
      spec.kind === 'carousel'
        ? (spec.slides ?? ['image', 'image', 'video']).map((kind) => ({ id: this.nextMediaId(), kind }))
        : [];
    const record: PostRecord = {
      id,
      accountId,
      seq: this.postSeq,
      photo: photoForCaption(spec.caption) ?? photoNumber(this.postSeq),
      kind: spec.kind,
      // A photo account's post says what its cover shows (the photo's own caption).
      caption:
        spec.caption !== undefined
          ? spec.caption
          : account.photos
            ? coverPhoto(this.postSeq).caption
            : `Post ${this.postSeq}`,
      likeCount: spec.likeCount === undefined ? (h % 500) + 3 : spec.likeCount,
      commentsCount: spec.commentsCount === undefined ? (h % 40) + 1 : spec.commentsCount,
      slides,
      width: spec.width ?? dw,
      height: spec.height ?? dh,
      timestamp: spec.timestamp ?? now,
      shortcode: createHash('sha256').update(`sc:${id}`).digest('base64url').slice(0, 11),
      rev: 0,
      signedAt: now,
      isSharedToFeed: h % 2 === 0,
      deleted: false,
      linksWithoutOe: spec.linksWithoutOe ?? false,
      videoBytes: spec.videoBytes ?? null,
      glitch: spec.glitch ?? null,
    };
    this.postsById.set(id, record);
    const own = this.postsOfAccount.get(accountId);
    if (own) own.push(record);
    else this.postsOfAccount.set(accountId, [record]);
    for (const s of slides) this.slideParent.set(s.id, record);
    return id;
  }

  post(accountId: string, mediaId: string): PostRecord {
    const p = this.postsById.get(mediaId);
    if (!p || p.accountId !== accountId || p.deleted)
      throw new Error(`simulator: account ${accountId} has no post ${mediaId}`);
    return p;
  }

  updatePost(accountId: string, mediaId: string, patch: Partial<PostSpec>): void {
    const p = this.post(accountId, mediaId);
    if (patch.kind !== undefined || patch.slides !== undefined) validateSpec({ ...patch, kind: patch.kind ?? p.kind });
    let visual = false;
    if (patch.kind !== undefined && patch.kind !== p.kind) {
      p.kind = patch.kind;
      visual = true;
    }
    if (patch.slides !== undefined || (p.kind === 'carousel' && p.slides.length === 0)) {
      for (const s of p.slides) this.slideParent.delete(s.id);
      p.slides = (patch.slides ?? ['image', 'image']).map((kind) => ({ id: this.nextMediaId(), kind }));
      for (const s of p.slides) this.slideParent.set(s.id, p);
      visual = true;
    }
    if (p.kind !== 'carousel' && p.slides.length > 0) {
      for (const s of p.slides) this.slideParent.delete(s.id);
      p.slides = [];
    }
    if (patch.width !== undefined && patch.width !== p.width) {
      p.width = patch.width;
      visual = true;
    }
    if (patch.height !== undefined && patch.height !== p.height) {
      p.height = patch.height;
      visual = true;
    }
    if (patch.caption !== undefined) p.caption = patch.caption;
    if (patch.likeCount !== undefined) p.likeCount = patch.likeCount;
    if (patch.commentsCount !== undefined) p.commentsCount = patch.commentsCount;
    if (patch.timestamp !== undefined) p.timestamp = patch.timestamp;
    if (patch.linksWithoutOe !== undefined) p.linksWithoutOe = patch.linksWithoutOe;
    if (patch.glitch !== undefined) p.glitch = patch.glitch;
    if (visual) {
      // A changed picture is a new file on the CDN: new link, new bytes.
      p.rev += 1;
      p.signedAt = this.clock.now();
    }
  }

  private readonly rawItems = new Map<string, Array<Record<string, unknown>>>();

  addRawItem(accountId: string, item: Record<string, unknown>): void {
    this.account(accountId);
    this.rawItems.set(accountId, [...(this.rawItems.get(accountId) ?? []), structuredClone(item)]);
  }

  clearRawItems(accountId: string): void {
    this.rawItems.delete(accountId);
  }

  private readonly endless = new Map<string, EndlessPaging>();

  /** simulator.setEndlessPaging: the account's listing never ends (null: it does again). */
  setEndlessPaging(accountId: string, mode: EndlessPaging | null): void {
    this.account(accountId);
    if (mode) this.endless.set(accountId, mode);
    else this.endless.delete(accountId);
  }

  endlessPaging(accountId: string): EndlessPaging | undefined {
    return this.endless.get(accountId);
  }

  /** The raw items of an account (simulator.addRawItem), served on the first listing page. */
  listRawItems(accountId: string): Array<Record<string, unknown>> {
    return this.rawItems.get(accountId) ?? [];
  }

  deletePost(accountId: string, mediaId: string): void {
    this.post(accountId, mediaId).deleted = true;
  }

  /** Current posts of an account, newest first (timestamp, then insertion order). */
  listPosts(accountId: string): PostRecord[] {
    return (this.postsOfAccount.get(accountId) ?? []).filter((p) => !p.deleted).sort(comparePosts);
  }

  permalink(p: PostRecord): string {
    return `${this.baseUrl()}/${p.kind === 'reel' ? 'reel' : 'p'}/${p.shortcode}/`;
  }

  publicPost(p: PostRecord): SimPost {
    return {
      id: p.id,
      accountId: p.accountId,
      kind: p.kind,
      caption: p.caption,
      likeCount: p.likeCount,
      commentsCount: p.commentsCount,
      slides: p.slides.map((s) => ({ ...s })),
      width: p.width,
      height: p.height,
      timestamp: new Date(p.timestamp),
      permalink: this.permalink(p),
    };
  }

  // ---- tokens ----

  /** Every app the platform knows, the first one (the simulator's own appId) included. */
  readonly apps = new Map<string, SimApp>();

  /** Register a further app (a fresh id and secret). */
  addApp(secretFor: () => string, idFor: () => string): SimApp {
    let appId = idFor();
    while (this.apps.has(appId)) appId = idFor();
    const app: SimApp = { appId, secret: secretFor(), restricted: false };
    this.apps.set(appId, app);
    this.onSecret(app.secret);
    return app;
  }

  app(appId: string): SimApp {
    const app = this.apps.get(appId);
    if (!app) throw new Error(`simulator: no app ${appId}`);
    return app;
  }

  /** The app the simulator started with (tokens issued without naming one are its). */
  primaryAppId = '';

  issueToken(
    accountId: string,
    kind: TokenKind,
    issuedAt: Date,
    scopes: string[] = [SCOPE],
    appId: string = this.primaryAppId,
  ): string {
    this.account(accountId);
    const token = randomToken(kind === 'short' ? 'IGQWR' : 'IGAA');
    const life = kind === 'short' ? SHORT_LIVED_MS : LONG_LIVED_MS;
    this.tokens.set(token, {
      accountId,
      kind,
      issuedAt,
      expiresAt: new Date(issuedAt.getTime() + life),
      scopes: [...scopes],
      appId,
    });
    this.onSecret(token);
    return token;
  }

  setPasswordChanged(accountId: string, changed: boolean): void {
    this.account(accountId);
    // Tokens alive at the change die (190/460); logging in again afterwards gives working tokens.
    for (const t of this.tokens.values()) {
      if (t.accountId !== accountId) continue;
      if (changed && !t.invalidated) t.invalidated = 'password';
      if (!changed && t.invalidated === 'password') delete t.invalidated;
    }
  }

  revokeTokens(accountId: string): void {
    this.account(accountId);
    for (const t of this.tokens.values()) if (t.accountId === accountId) t.invalidated = 'revoked';
  }

  /** Every live token of the account expires now; how many did. */
  expireTokens(accountId: string): number {
    this.account(accountId);
    const now = this.clock.now();
    let n = 0;
    for (const t of this.tokens.values()) {
      if (t.accountId !== accountId || t.invalidated || t.expiresAt.getTime() <= now.getTime()) continue;
      t.expiresAt = new Date(now);
      n += 1;
    }
    return n;
  }

  issueCode(c: Omit<CodeRecord, 'expiresAt' | 'used'>): string {
    const code = randomToken('AQ', 48);
    this.codes.set(code, { ...c, expiresAt: new Date(this.clock.now().getTime() + CODE_LIFETIME_MS), used: false });
    this.onSecret(code);
    return code;
  }
}

export function comparePosts(a: PostRecord, b: PostRecord): number {
  return b.timestamp.getTime() - a.timestamp.getTime() || b.seq - a.seq;
}

const KINDS: readonly PostKind[] = ['image', 'video', 'reel', 'carousel', 'copyright'];
const SLIDE_KINDS: readonly SlideKind[] = ['image', 'video', 'image-no-url'];

function validateSpec(spec: Partial<PostSpec> & { kind: PostKind }): void {
  if (!KINDS.includes(spec.kind)) throw new Error(`simulator: unknown post kind '${String(spec.kind)}'`);
  if (spec.slides) {
    if (spec.slides.length < 1 || spec.slides.length > 20) throw new Error('simulator: a carousel has 1 to 20 slides');
    for (const s of spec.slides)
      if (!SLIDE_KINDS.includes(s)) throw new Error(`simulator: unknown slide kind '${String(s)}'`);
  }
  for (const k of ['width', 'height'] as const) {
    const v = spec[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 4096))
      throw new Error(`simulator: ${k} must be an integer 1..4096`);
  }
}
