import type { MediaItem } from '../platform/media-item.ts';
import type { Profile } from '../platform/types.ts';
import { PROFILE_URL_BASE } from '../platform/identifiers.ts';
import { originSchema, type Origin } from '../schema/v1.ts';

export interface OriginOptions {
  /** The account's media items: their `username` is the fallback when the profile lacks one (R-OWN-5). */
  items?: readonly Pick<MediaItem, 'username'>[];
}

/** A handle as schema v1 wants it: trimmed, without a leading @ (R-SCH-2). */
function handle(value: string | undefined): string | undefined {
  const h = value?.trim().replace(/^@+/, '');
  return h ? h : undefined;
}

/**
 * The feed's origin from the account's profile (R-OWN-5: the profile record is not specified; read
 * username and, where offered, name and picture; fall back to the media items' username).
 * Throws when no username can be found anywhere: Origin.name and url cannot be made up.
 */
export function originFromProfile(profile: Profile, opts: OriginOptions = {}): Origin {
  const username = handle(profile.username) ?? opts.items?.map((i) => handle(i.username)).find((u) => u !== undefined);
  if (!username) {
    throw new Error(
      `account ${profile.id}: neither the profile nor its media items carry a username; cannot name the feed's origin`,
    );
  }
  const displayName = profile.name?.trim() || username;
  const avatarUrl =
    profile.profilePictureUrl && /^https?:\/\//.test(profile.profilePictureUrl) ? profile.profilePictureUrl : undefined;
  return originSchema.parse({
    kind: 'profile',
    id: profile.id,
    name: username,
    displayName,
    url: `${PROFILE_URL_BASE}${encodeURIComponent(username)}/`,
    ...(avatarUrl ? { avatarUrl } : {}),
  });
}
