import { z } from 'zod';
import { systemClock, type Clock } from '../util/clock.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import { registerSecret } from '../util/redact.ts';
import {
  isAppFault,
  InsufficientDeveloperRoleError,
  MalformedResponseError,
  MissingScopeError,
  PersonalAccountError,
  PlatformError,
  PlatformRequestError,
  RunawayListingError,
  TokenInvalidError,
} from './errors.ts';
import { type Operation } from './error-mapping.ts';
import { PlatformHttp, type PlatformCallObserver } from './http.ts';

export type { PlatformCallObserver, PlatformCallOutcome } from './http.ts';
import { EXCHANGE_PATH, GRANT_AUTHORIZATION_CODE, GRANT_EXCHANGE, GRANT_REFRESH, REFRESH_PATH } from './identifiers.ts';
import {
  DROPPABLE_FIELDS,
  FULL_FEED_FIELDS,
  mediaItemSchema,
  type DroppableField,
  type MediaItem,
} from './media-item.ts';
import type { PlatformUsage } from './rate-limit.ts';
import type { CallPacer } from './pacing.ts';
import { earliestExpiry } from './links.ts';
import type { ListMediaOptions, MediaListing, Profile, ShortLivedGrant, TokenGrant } from './types.ts';

/**
 * The platform's HTTP API: code exchange, token exchange and refresh, profile, media edge, single
 * media. Knows nothing of Postgres, Redis or storage. Every failure is a typed PlatformError
 * (errors.ts) built by one mapping function (error-mapping.ts); nothing it logs or throws carries
 * a token, the app secret or a query string (R-TOK-11, R-LNK-7, R-MED-6).
 */

export interface PlatformClientOptions {
  graphUrl: string;
  apiVersion: string;
  oauthTokenUrl: string;
  appId?: string | undefined;
  appSecret?: string | undefined;
  clock?: Clock;
  logger?: Logger;
  /** Per request, body included (default 15000). */
  timeoutMs?: number;
  /** Transient retries (default 3). */
  maxRetries?: number;
  /** Media edge `limit` (default 50, R-OWN-3). */
  pageSize?: number;
  /** A larger body is refused without being read whole (default 10 MB). */
  maxResponseBytes?: number;
  /** Backoff waits; tests inject a recorder. */
  sleep?: (ms: number) => Promise<void>;
  /** Jitter source. */
  random?: () => number;
  /** Told of every request sent (metrics); optional, so the client needs no metrics to work. */
  observer?: PlatformCallObserver;
  /** Per-account budget (R-OWN-1) for listing and single-media calls. */
  pacer?: CallPacer;
  /** feedmirror's name of the app (APP_ID/APP_SECRET: `default`); its errors carry it. */
  app?: string;
}

export const DEFAULT_TIMEOUT_MS = 15_000;
export const DEFAULT_MAX_RETRIES = 3;
export const DEFAULT_PAGE_SIZE = 50;
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_MAX_PAGES = 1000;
/** R-NET-6: this many pages in a row without a post not already read end a listing. */
export const PAGES_WITHOUT_NEW_ITEMS = 2;
/** R-OWN-5: everything the profile may offer; the platform may refuse some of it. */
export const PROFILE_FIELDS = ['user_id', 'username', 'name', 'account_type', 'profile_picture_url'] as const;
/** Fallbacks when the full profile field list is refused, most to least. */
const PROFILE_FALLBACK_FIELDS = [
  ['user_id', 'username', 'account_type'],
  ['user_id', 'username'],
] as const;
/** R-MED-8: the fields whose links a single-media call renews. */
export const RENEW_FIELDS = ['media_url', 'thumbnail_url', 'children{media_type,media_url,thumbnail_url}'] as const;

/** Failures that mean the account itself needs its owner: thrown even from a listing. */
function isAccountError(error: unknown): boolean {
  return (
    error instanceof TokenInvalidError ||
    error instanceof InsufficientDeveloperRoleError ||
    error instanceof PersonalAccountError ||
    error instanceof MissingScopeError ||
    isAppFault(error)
  );
}

// ---- response schemas (zod at the edge) ----

/** R-TOK-3, R-TOK-4 */
const tokenResponseSchema = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string().min(1).optional().default('bearer'),
  expires_in: z.number().positive(),
});

const idString = z.union([z.string().min(1), z.number().int().nonnegative().transform(String)]);
const permissionsSchema = z
  .union([
    z.array(z.string()),
    z.string().transform((s) =>
      s
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
    ),
  ])
  .optional();
const shortLivedSchema = z.looseObject({
  access_token: z.string().min(1),
  user_id: idString,
  permissions: permissionsSchema,
});
/** Both documented shapes of the code exchange answer: flat, or wrapped in `data: [grant]`. */
const codeExchangeSchema = z.preprocess((body) => {
  const data = body && typeof body === 'object' ? (body as { data?: unknown }).data : undefined;
  return Array.isArray(data) ? ((data as unknown[])[0] ?? {}) : body;
}, shortLivedSchema);

const profileSchema = z.looseObject({
  id: idString.optional(),
  user_id: idString.optional(),
  username: z.string().min(1).optional(),
  name: z.string().optional(),
  account_type: z.string().optional(),
  profile_picture_url: z.string().optional(),
});

const mediaCountSchema = z.looseObject({ media_count: z.number().int().nonnegative().optional() });

const pagingSchema = z.looseObject({
  next: z.string().min(1).optional(),
  cursors: z.looseObject({ before: z.string().optional(), after: z.string().optional() }).optional(),
});
const mediaPageSchema = z.looseObject({ data: z.array(mediaItemSchema), paging: pagingSchema.optional() });
/** A listing page: items are checked one by one (listMedia), so one bad item never fails the page. */
const mediaListPageSchema = z.looseObject({ data: z.array(z.unknown()), paging: pagingSchema.optional() });

/** What a malformed item calls its id, for the skip record; never more than an id's length. */
function claimedId(raw: unknown): string {
  const id = (raw as { id?: unknown } | null)?.id;
  return (typeof id === 'string' || typeof id === 'number') && String(id).length > 0
    ? String(id).slice(0, 128)
    : '(no id)';
}

const MEDIA_ID_RE = /^[A-Za-z0-9_-]+$/;
const FIELD_NAME_RE: Record<DroppableField, RegExp> = {
  caption: /\bcaption\b/i,
  media_product_type: /\bmedia_product_type\b/i,
};
/** Graph "invalid parameter": how a refused field is reported (R-MED-4). */
const FIELD_REFUSED_CODE = 100;

export class PlatformClient {
  private readonly graphBase: string;
  private readonly graphOrigin: string;
  private readonly apiVersion: string;
  private readonly oauthTokenUrl: string;
  private readonly appId?: string | undefined;
  private readonly appSecret?: string | undefined;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly pageSize: number;
  private readonly http: PlatformHttp;
  private usage?: PlatformUsage;

  constructor(opts: PlatformClientOptions) {
    const graph = new URL(opts.graphUrl);
    this.graphBase = graph.toString().replace(/\/+$/, '');
    this.graphOrigin = graph.origin;
    this.apiVersion = opts.apiVersion;
    this.oauthTokenUrl = opts.oauthTokenUrl;
    this.appId = opts.appId;
    this.appSecret = opts.appSecret;
    registerSecret(opts.appSecret);
    this.clock = opts.clock ?? systemClock;
    this.logger = opts.logger ?? silentLogger;
    this.pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
    this.http = new PlatformHttp({
      clock: this.clock,
      logger: this.logger,
      timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxRetries: opts.maxRetries ?? DEFAULT_MAX_RETRIES,
      maxResponseBytes: opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      sleep: opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
      random: opts.random ?? Math.random,
      onUsage: (usage) => {
        this.usage = usage;
      },
      ...(opts.observer ? { observer: opts.observer } : {}),
      ...(opts.pacer ? { pacer: opts.pacer } : {}),
      ...(opts.app !== undefined ? { app: opts.app } : {}),
    });
    this.app = opts.app;
  }

  /** feedmirror's name of the app this client calls for, when it was given one. */
  readonly app: string | undefined;

  /** The latest usage figures the platform reported (R-OWN-1), if any. */
  get lastUsage(): PlatformUsage | undefined {
    return this.usage;
  }

  /** Unversioned token endpoints (R-MED-1). */
  private tokenUrl(path: string, params: Record<string, string>): URL {
    const url = new URL(this.graphBase + path);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    return url;
  }

  /** Versioned data endpoints (R-MED-1). */
  private dataUrl(path: string, token: string, params: Record<string, string>): URL {
    const url = new URL(`${this.graphBase}/${this.apiVersion}${path}`);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    url.searchParams.set('access_token', token);
    return url;
  }

  private requireApp(operation: Operation): { appId: string; appSecret: string } {
    if (!this.appId || !this.appSecret) {
      throw new PlatformRequestError(
        this.app && this.app !== 'default'
          ? `${operation}: app ${this.app} has no id or secret`
          : `${operation}: APP_ID and APP_SECRET must be configured`,
        { operation },
      );
    }
    return { appId: this.appId, appSecret: this.appSecret };
  }

  private toGrant(body: z.output<typeof tokenResponseSchema>): TokenGrant {
    return {
      accessToken: body.access_token,
      tokenType: body.token_type,
      expiresIn: body.expires_in,
      // R-TOK-4: absolute expiry from the injected clock.
      expiresAt: new Date(this.clock.now().getTime() + body.expires_in * 1000),
    };
  }

  /**
   * The login's code-for-short-lived-token exchange (POST form). The code is single-use: the call
   * is never repeated once it may have reached the platform.
   */
  async exchangeCode(code: string, redirectUri: string): Promise<ShortLivedGrant> {
    const operation = 'code exchange';
    const { appId, appSecret } = this.requireApp(operation);
    const form = new URLSearchParams({
      client_id: appId,
      client_secret: appSecret,
      grant_type: GRANT_AUTHORIZATION_CODE,
      redirect_uri: redirectUri,
      code,
    });
    const body = await this.http.call({
      operation,
      url: new URL(this.oauthTokenUrl),
      form,
      schema: codeExchangeSchema,
      secrets: [code, appSecret],
      idempotent: false,
      readsUsage: false,
    });
    const grant = body;
    return { accessToken: grant.access_token, userId: grant.user_id, permissions: grant.permissions };
  }

  /** R-TOK-1: short-lived -> long-lived; carries the app secret; no version segment. */
  async exchangeToken(shortLivedToken: string): Promise<TokenGrant> {
    const operation = 'token exchange';
    const { appSecret } = this.requireApp(operation);
    const url = this.tokenUrl(EXCHANGE_PATH, {
      grant_type: GRANT_EXCHANGE,
      client_secret: appSecret,
      access_token: shortLivedToken,
    });
    const body = await this.http.call({
      operation,
      url,
      schema: tokenResponseSchema,
      secrets: [shortLivedToken, appSecret],
      idempotent: true,
      readsUsage: true,
    });
    return this.toGrant(body);
  }

  /** R-TOK-2: long-lived -> refreshed; no app secret is sent. */
  async refreshToken(longLivedToken: string): Promise<TokenGrant> {
    const operation = 'token refresh';
    const url = this.tokenUrl(REFRESH_PATH, { grant_type: GRANT_REFRESH, access_token: longLivedToken });
    const body = await this.http.call({
      operation,
      url,
      schema: tokenResponseSchema,
      secrets: [longLivedToken],
      idempotent: true,
      readsUsage: true,
    });
    return this.toGrant(body);
  }

  /**
   * R-OWN-5: the profile as far as offered. When the platform refuses optional fields the call is
   * repeated with fewer; when no username comes back, the media items' username is used.
   */
  async getProfile(token: string): Promise<Profile> {
    const operation = 'profile';
    const fieldSets: ReadonlyArray<readonly string[]> = [PROFILE_FIELDS, ...PROFILE_FALLBACK_FIELDS];
    let body: z.output<typeof profileSchema> | undefined;
    let lastError: PlatformError | undefined;
    for (const fields of fieldSets) {
      try {
        body = await this.http.call({
          operation,
          url: this.dataUrl('/me', token, { fields: fields.join(',') }),
          schema: profileSchema,
          secrets: [token],
          idempotent: true,
          readsUsage: true,
        });
        break;
      } catch (error) {
        // Only a refused request is worth asking again with fewer fields.
        if (!(error instanceof PlatformRequestError)) throw error;
        lastError = error;
      }
    }
    if (!body) throw lastError ?? new PlatformRequestError(`${operation}: no answer`, { operation });
    const id = body.user_id ?? body.id;
    if (!id)
      throw new MalformedResponseError(
        `${operation}: malformed response from the platform: user_id: missing (and no id)`,
        { operation },
      );
    let username = body.username;
    if (!username) {
      const media = await this.http.call({
        operation,
        url: this.dataUrl('/me/media', token, { fields: 'username', limit: '1' }),
        schema: mediaPageSchema,
        secrets: [token],
        idempotent: true,
        readsUsage: true,
      });
      username = media.data.find((m) => m.username)?.username;
      if (!username)
        throw new MalformedResponseError(
          `${operation}: the platform returned no username, neither in the profile nor in the media`,
          { operation },
        );
    }
    return {
      id,
      username,
      name: body.name,
      accountType: body.account_type,
      profilePictureUrl: body.profile_picture_url,
    };
  }

  /**
   * R-OWN-7: how many posts the profile says the account has (`media_count`), a second witness
   * beside the listing before a large removal is carried out; null when the platform does not
   * offer the field. Errors are thrown as by every call.
   */
  async mediaCount(token: string): Promise<number | null> {
    const body = await this.http.call({
      operation: 'profile',
      url: this.dataUrl('/me', token, { fields: 'media_count' }),
      schema: mediaCountSchema,
      secrets: [token],
      idempotent: true,
      readsUsage: true,
    });
    return body.media_count ?? null;
  }

  /**
   * The whole media edge (R-MED-5): follows paging.next until absent, merges by id (R-MED-7),
   * drops refused optional fields one at a time on the first call (R-MED-4). Account errors are
   * thrown; any other failure ends the listing incomplete (it must never prune).
   */
  async listMedia(token: string, opts: ListMediaOptions = {}): Promise<MediaListing> {
    const operation = 'media list';
    const counter = { calls: 0 };
    const maxPages = opts.maxPages ?? DEFAULT_MAX_PAGES;
    const limit = String(opts.pageSize ?? this.pageSize);
    const known = new Set<DroppableField>(opts.refusedFields ?? []);
    const refused: DroppableField[] = [];
    const fieldsFor = () =>
      FULL_FEED_FIELDS.filter((f) => !known.has(f as DroppableField) && !refused.includes(f as DroppableField)).join(
        ',',
      );

    const items: MediaItem[] = [];
    const skipped: MediaListing['skipped'] = [];
    const seen = new Set<string>();
    let pages = 0;
    const expiries = new Map<string, Date | null>();
    const result = (complete: boolean, error?: PlatformError): MediaListing => ({
      items,
      complete,
      pages,
      refusedFields: refused,
      error,
      calls: counter.calls,
      skipped,
      expiries,
    });
    const fetchPage = (url: URL) =>
      this.http.call({
        operation,
        url,
        schema: mediaListPageSchema,
        secrets: [token],
        idempotent: true,
        readsUsage: true,
        counter,
        ...(opts.accountId ? { accountId: opts.accountId } : {}),
      });

    // First page, with the field fallback (R-MED-4).
    let page: z.output<typeof mediaListPageSchema>;
    for (;;) {
      try {
        page = await fetchPage(this.dataUrl('/me/media', token, { fields: fieldsFor(), limit }));
        break;
      } catch (error) {
        if (isAccountError(error) || !(error instanceof PlatformError)) throw error;
        const drop = this.fieldToDrop(error, known, refused);
        if (!drop) {
          // Not a field refusal, or dropping did not help: report nothing as refused, so a caller
          // never remembers a field the account may well accept.
          refused.length = 0;
          return result(false, error);
        }
        refused.push(drop);
        this.logger.info({ operation, field: drop }, 'the platform refused an optional field; asking again without it');
      }
    }

    // R-NET-6: a listing that keeps paging past what the account can hold stops on its own.
    const visitedNext = new Set<string>();
    const maxItems = opts.maxItems ?? Infinity;
    let itemsRead = 0;
    let pagesWithoutNew = 0;
    const runaway = (why: string, stop: RunawayListingError['stop']) =>
      result(
        false,
        new RunawayListingError(
          `${operation}: stopped after ${pages} pages and ${itemsRead} items: ${why}; the listing is incomplete`,
          stop,
          { operation },
        ),
      );
    for (;;) {
      pages++;
      itemsRead += page.data.length;
      let newItems = 0;
      for (const raw of page.data) {
        const parsed = mediaItemSchema.safeParse(raw);
        if (!parsed.success) {
          // One malformed item is left out with its reason; the rest of the page is used.
          const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'item'}: ${i.message}`).join('; ');
          skipped.push({ id: claimedId(raw), reason: `malformed item: ${problems}`.slice(0, 300) });
          continue;
        }
        const item = parsed.data;
        if (seen.has(item.id)) continue; // R-MED-7: first occurrence wins
        seen.add(item.id);
        newItems++;
        items.push(item);
        expiries.set(item.id, earliestExpiry(item) ?? null); // oe parsed once, here (R-LNK-1)
      }
      pagesWithoutNew = newItems > 0 ? 0 : pagesWithoutNew + 1;
      opts.onPage?.({ index: pages - 1, items: page.data.length });
      const next = page.paging?.next;
      if (!next) return result(true); // R-MED-5: only an absent next ends the listing
      if (pagesWithoutNew >= PAGES_WITHOUT_NEW_ITEMS)
        return runaway(`${pagesWithoutNew} pages in a row brought no post not already read`, 'no-new-items');
      if (itemsRead >= maxItems)
        return runaway(
          `more items than this account can plausibly hold (${maxItems}, from its last complete listing)`,
          'item-bound',
        );
      if (pages >= maxPages) return runaway(`the page guard (${maxPages} pages) was reached`, 'page-guard');
      const nextUrl = this.safeNextUrl(next, token);
      if (nextUrl instanceof PlatformError) return result(false, nextUrl);
      // The same page asked for twice: by its cursor (`after`), or by its whole address.
      const key = nextUrl.searchParams.get('after') ?? nextUrl.toString();
      if (visitedNext.has(key)) return runaway('paging.next repeats a cursor of an earlier page', 'repeated-cursor');
      visitedNext.add(key);
      try {
        page = await fetchPage(nextUrl);
      } catch (error) {
        if (isAccountError(error) || !(error instanceof PlatformError)) throw error;
        return result(false, error);
      }
    }
  }

  /**
   * R-MED-6: paging.next is followed only on the graph host itself, so the token it carries can
   * never be sent elsewhere. A next link without the token gets it (same origin only).
   */
  private safeNextUrl(next: string, token: string): URL | PlatformError {
    let url: URL;
    try {
      url = new URL(next);
    } catch {
      return new MalformedResponseError('media list: paging.next is not a URL; the listing is incomplete', {
        operation: 'media list',
      });
    }
    if (url.origin !== this.graphOrigin) {
      return new MalformedResponseError(
        `media list: paging.next points at another host (${url.host}); not followed, the listing is incomplete`,
        {
          operation: 'media list',
        },
      );
    }
    if (!url.searchParams.has('access_token')) url.searchParams.set('access_token', token);
    return url;
  }

  /**
   * R-MED-4: which optional field to drop after a refused first call: the one the message names,
   * else the next in DROPPABLE_FIELDS order; undefined when the error is not a field refusal or
   * nothing is left to drop.
   */
  private fieldToDrop(
    error: PlatformError,
    known: ReadonlySet<DroppableField>,
    refused: readonly DroppableField[],
  ): DroppableField | undefined {
    if (!(error instanceof PlatformRequestError)) return undefined;
    const message = error.platformMessage ?? '';
    const named = DROPPABLE_FIELDS.filter((f) => FIELD_NAME_RE[f].test(message));
    if (error.code !== FIELD_REFUSED_CODE && named.length === 0) return undefined;
    const remaining = DROPPABLE_FIELDS.filter((f) => !known.has(f) && !refused.includes(f));
    return remaining.find((f) => named.includes(f)) ?? remaining[0];
  }

  /** R-MED-8: one media item with newly signed links; the only way to renew an expired link. */
  async getMedia(
    token: string,
    mediaId: string,
    fields: readonly string[] = RENEW_FIELDS,
    opts: { accountId?: string } = {},
  ): Promise<MediaItem> {
    const operation = 'media item';
    // The id comes from platform data: it must stay one path segment.
    if (!MEDIA_ID_RE.test(mediaId)) throw new PlatformRequestError(`${operation}: invalid media id`, { operation });
    return this.http.call({
      operation,
      url: this.dataUrl(`/${mediaId}`, token, { fields: fields.join(',') }),
      schema: mediaItemSchema,
      secrets: [token],
      idempotent: true,
      readsUsage: true,
      ...(opts.accountId ? { accountId: opts.accountId } : {}),
    });
  }
}
