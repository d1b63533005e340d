import type { ManualClock } from '../util/clock.ts';

/** What a simulated post is; `copyright` is a video whose media_url (and cover) the platform withholds. */
export type PostKind = 'image' | 'video' | 'reel' | 'carousel' | 'copyright';
/** A carousel slide; `image-no-url` is a photo slide the platform returns without media_url. */
export type SlideKind = 'image' | 'video' | 'image-no-url';
export type AccountType = 'BUSINESS' | 'MEDIA_CREATOR' | 'PERSONAL';
/** The optional fields the platform may refuse or silently omit for this login variant (R-MED-4). */
export type DroppableField = 'caption' | 'media_product_type';

export interface PostSpec {
  kind: PostKind;
  /** undefined => a generated caption; null => no caption field at all. */
  caption?: string | null | undefined;
  /** undefined => a generated count; null => the field is absent (R-MED-10). */
  likeCount?: number | null;
  commentsCount?: number | null;
  slides?: SlideKind[];
  width?: number;
  height?: number;
  timestamp?: Date;
  /** Its links carry no `oe` at all (an unknown expiry, R-LNK-1); the image host serves them. */
  linksWithoutOe?: boolean;
  /**
   * A video's (or reel's) file size in bytes: its playable MP4 grown by a trailing `free` box of
   * zeros (mp4.ts paddedMp4), streamed as it is served. Unset: the bare MP4 (tens of KB).
   */
  videoBytes?: number;
  /**
   * What a platform glitch does to this post in listings and reads: an unknown media_type or no
   * timestamp (the item no longer converts). null clears it.
   */
  glitch?: 'unknown-media-type' | 'no-timestamp' | null;
}

export interface SimAccountOptions {
  username?: string | undefined;
  name?: string | undefined;
  accountType?: AccountType | undefined;
  /** A number gives a deterministic mix covering every shape (see posts.ts MIX). */
  posts?: number | PostSpec[] | undefined;
  /** Asking for these answers HTTP 400 code 100 (R-MED-4). */
  refuseFields?: DroppableField[];
  /** These are silently left out of every item (R-MED-4). */
  omitFields?: DroppableField[];
  /** false => every call with this account's tokens answers "Insufficient developer role" (R-TOK-14). */
  tester?: boolean | undefined;
  profilePicture?: boolean;
  /**
   * true => its pictures (photos, slides, video and reel covers) are the bundled photographs of
   * photos.ts, as the demo's accounts post; unset => generated scenes (scene.ts), cheap enough for
   * the thousands a test run or a benchmark renders. Profile pictures are drawn either way.
   */
  photos?: boolean | undefined;
}

export interface SimAccount {
  id: string;
  username: string;
}

export interface SimSlide {
  id: string;
  kind: SlideKind;
}

/** A post as the simulator holds it (a copy; changing it changes nothing). */
export interface SimPost {
  id: string;
  accountId: string;
  kind: PostKind;
  caption: string | null;
  likeCount: number | null;
  commentsCount: number | null;
  slides: SimSlide[];
  width: number;
  height: number;
  timestamp: Date;
  permalink: string;
}

export type RequestHost = 'graph' | 'oauth' | 'cdn';

export interface RecordedRequest {
  method: string;
  host: RequestHost;
  path: string;
  query: Record<string, string>;
  form?: Record<string, string>;
  /** Simulated time of arrival. */
  at: Date;
  /** Wall-clock time of arrival (ms since the epoch): what BullMQ's delays, which run on real time, are measured against. */
  wallAt: number;
  /** 0 while unanswered, and for faults that never answer (timeout, reset). */
  status: number;
}

/**
 * 'answered-unsent': the platform does the work (a refresh issues its new token) but the answer
 * never reaches the client, as when a worker dies between the platform's answer and its own write.
 */
export type FaultKind =
  | 'status'
  | 'timeout'
  | 'reset'
  | 'rate-limit'
  | 'malformed-json'
  | 'html'
  | 'huge'
  | 'error'
  | 'answered-unsent'
  | 'json';

export interface FaultSpec {
  /** A string matches when the pathname ends with it; a RegExp is tested on the pathname. */
  path?: string | RegExp;
  match?: (r: { host: string; path: string; query: Record<string, string> }) => boolean;
  kind: FaultKind;
  /** For 'status' (default 500), 'rate-limit' (default 429), 'html' (default 502), 'error' (default 400). */
  status?: number | undefined;
  /** rate-limit code 4|17|32|613 (default 4), or the error code for 'error' (default 2). */
  code?: number;
  subcode?: number;
  message?: string;
  /** Default 1; Infinity allowed. */
  times?: number;
  /** For 'huge' (default 50 MB). */
  sizeBytes?: number;
  /** For 'rate-limit': estimated_time_to_regain_access in minutes (default 1). */
  regainMinutes?: number;
  /** For 'json': the body answered with status 200 (default `{"data":[]}`: an empty page without paging). */
  body?: unknown;
}

export interface SimulatorOptions {
  host?: string;
  /** The main listener's port (graph, login, control); 0 or unset: any free port. */
  port?: number;
  /** The image host's port; 0 or unset: any free port. */
  imagePort?: number;
  appId?: string | undefined;
  appSecret?: string | undefined;
  /**
   * The control API's secret (`Authorization: Bearer <it>` on every /__sim/ call); a random one
   * when unset (read it from `Simulator.controlSecret`).
   */
  controlSecret?: string | undefined;
  /** The key that signs the image host's links (32 bytes); random when unset. */
  linkKey?: Buffer;
  start?: Date | number;
  linkLifetimeMs?: number;
  codeResponseShape?: 'flat' | 'data';
  maxLimit?: number;
  shortPages?: boolean;
  /**
   * Told every secret the simulator creates (app secret, tokens, codes). Default: when
   * FEEDMIRROR_CAPTURE_DIR is set (the test suite), they are appended to the secrets audit ledger
   * there, so test/audit checks none of them leaked into captured output.
   */
  onSecret?: (secret: string) => void;
  /**
   * Throttle as the platform does (R-OWN-1): calls per user and per app in a sliding window (an
   * hour unless windowMs), answered with codes 17 and 4 past them. Unset: usage is reported only.
   * wallClock: windows follow the real time rather than the simulated clock.
   */
  limits?: { callsPerUserHour?: number; appCallsPerHour?: number; windowMs?: number; wallClock?: boolean };
}

export type EndlessPaging = 'new-cursor' | 'same-cursor';

export interface Simulator {
  url: string;
  graphUrl: string;
  authorizeUrl: string;
  oauthTokenUrl: string;
  imageBaseUrl: string;
  imageHost: string;
  appId: string;
  appSecret: string;
  controlSecret: string;
  /** The ports it listens on: main (graph, login, control) and the image host. */
  port: number;
  imagePort: number;
  /** The key signing the image host's links (keep it to keep links valid across a restart). */
  linkKey: Buffer;
  clock: ManualClock;
  requests: RecordedRequest[];
  createAccount(opts?: SimAccountOptions): SimAccount;
  addPost(accountId: string, spec: PostSpec): string;
  updatePost(accountId: string, mediaId: string, patch: Partial<PostSpec>): void;
  deletePost(accountId: string, mediaId: string): void;
  /**
   * Put an item exactly as given (a malformed id, a missing timestamp, a field of the wrong type)
   * on the first page of the account's media listing, next to its real posts: what a platform
   * glitch looks like. clearRawItems takes them away again.
   */
  addRawItem(accountId: string, item: Record<string, unknown>): void;
  clearRawItems(accountId: string): void;
  /**
   * A listing that never ends, as a broken or hostile platform pages: every page is the first page
   * again with a paging.next, its cursor new on every page ('new-cursor') or always the same one
   * ('same-cursor'). null: the listing ends again.
   */
  setEndlessPaging(accountId: string, mode: EndlessPaging | null): void;
  posts(accountId: string): SimPost[];
  /** A short-lived token, as the login gives it to an app (default: the simulator's first app). */
  issueShortLivedToken(accountId: string, opts?: { scopes?: string[]; appId?: string }): string;
  issueLongLivedToken(accountId: string, opts?: { issuedAt?: Date; scopes?: string[] }): string;
  setPasswordChanged(accountId: string, changed: boolean): void;
  revokeTokens(accountId: string): void;
  /**
   * The account a token (or an app token's owner) belongs to; undefined when the platform never
   * issued it. For checkers and faults that act per account on calls that carry only a token.
   */
  accountOfToken(token: string): string | undefined;
  /** Every live token of the account expires now (the next call answers 190/463). */
  expireTokens(accountId: string): number;
  /**
   * For `seconds` of simulated time every graph call answers the app-level rate limit (code 4),
   * as the platform does once an app spent its calls; 0 ends the window. Returns its end.
   */
  rateLimitFor(seconds: number, opts?: { appId?: string }): Date;
  /**
   * Register a further app with the platform (Standard Access: one app per client): a fresh id
   * and secret. Its logins, tokens and rate limits are its own; a token works only with the
   * secret of the app that obtained it.
   */
  addApp(): { appId: string; appSecret: string };
  /** The platform gives the app a new secret: the old one is refused from now on (code 101). */
  resetAppSecret(appId: string): { appId: string; appSecret: string };
  /** The platform restricts the app (every call of its tokens answers code 368), or lifts it. */
  restrictApp(appId: string, restricted: boolean): void;
  autoApprove: string | null;
  injectFault(f: FaultSpec): void;
  clearFaults(): void;
  /**
   * A GET on the graph host answered in-process by the same handler as over HTTP (path below the
   * host, e.g. '/v25.0/me/media'), without faults, rate limits or a record of the request. For
   * set-ups that read many listings (the benchmark's soak reads 100,000), not for tests of the
   * client: those go over HTTP.
   */
  graphGet(path: string, query: Record<string, string>): { status: number; body: string };
  close(): Promise<void>;
}
