import type { MediaItem } from './media-item.ts';
import type { PlatformError } from './errors.ts';
import type { DroppableField } from './media-item.ts';

/** Result of the login's code exchange (short-lived token, valid one hour). */
export interface ShortLivedGrant {
  accessToken: string;
  userId: string;
  permissions?: string[] | undefined;
}

/** Result of exchange or refresh: the token and its absolute expiry (R-TOK-4). */
export interface TokenGrant {
  accessToken: string;
  tokenType: string;
  expiresIn: number;
  /** now (from the injected clock) + expiresIn seconds. */
  expiresAt: Date;
}

/** The profile (`/me`) as far as the platform offers it (R-OWN-5). */
export interface Profile {
  id: string;
  username: string;
  name?: string | undefined;
  accountType?: string | undefined;
  profilePictureUrl?: string | undefined;
}

export interface MediaListing {
  /** Merged by id across pages (R-MED-7), in the order first seen. */
  items: MediaItem[];
  /** True only when paging.next was followed until absent (R-MED-5). Only a complete listing may prune. */
  complete: boolean;
  pages: number;
  /** Optional fields the account refused; remember them per account (R-MED-4). */
  refusedFields: DroppableField[];
  /** Why the listing stopped early, when it did. */
  error?: PlatformError | undefined;
  /** Platform calls made, retries included. */
  calls: number;
  /**
   * Items that do not have the shape of a media item (a missing id, a field of the wrong type, a
   * broken child): left out with the reason, so one bad item never fails a page. `id` is what
   * the item called its id, or "(no id)".
   */
  skipped: Array<{ id: string; reason: string }>;
  /** Each item's earliest link expiry (R-LNK-1, R-LNK-4), parsed once here: id -> oe (null: none). */
  expiries: Map<string, Date | null>;
}

export interface ListMediaOptions {
  /** Fields already known to be refused by this account: not asked for again. */
  refusedFields?: readonly DroppableField[];
  pageSize?: number;
  /** Upper bound on pages, a guard against a platform that never ends its listing. */
  maxPages?: number;
  /**
   * R-NET-6: items (as read, duplicates included) after which a listing that still has a next
   * page is stopped as a runaway; the caller derives it from the account's last complete listing.
   */
  maxItems?: number;
  onPage?: (page: { index: number; items: number }) => void;
  /** The account whose hourly budget the calls spend (R-OWN-1; paced when the client has a pacer). */
  accountId?: string;
}
