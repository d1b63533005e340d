/**
 * An image reference is pinned when its tag names one exact release (and, optionally, the digest of
 * that release): `latest`, a bare major (`redis:7`), a major.minor (`node:22.12-slim`) or no tag at
 * all float to whatever is newest when the image is next pulled. Each image feedmirror's files use
 * has its own tag form; an image not listed here is refused until its exact form is added.
 */
const EXACT_TAGS: Record<string, RegExp> = {
  node: /^\d+\.\d+\.\d+-bookworm-slim$/,
  redis: /^\d+\.\d+\.\d+-bookworm$/,
  // PostgreSQL's versions are major.minor; -bookworm keeps glibc, and so the collation order of
  // the indexes on disk, the same across bumps (a new Debian needs a REINDEX).
  postgres: /^\d+\.\d+-bookworm$/,
  'minio/minio': /^RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ$/,
  'minio/mc': /^RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ$/,
  'axllent/mailpit': /^v\d+\.\d+\.\d+$/,
};

/** Why `ref` is not pinned, or undefined when it is. */
export function floatingTag(ref: string): string | undefined {
  const m = /^(?<name>[a-z0-9][a-z0-9._/-]*?)(?::(?<tag>[\w][\w.-]{0,127}))?(?:@sha256:(?<digest>[0-9a-f]{64}))?$/.exec(
    ref,
  );
  if (!m?.groups) return `${ref}: not an image reference`;
  const { name, tag } = m.groups as { name: string; tag?: string };
  if (!tag) return `${ref}: no tag (means latest)`;
  if (tag === 'latest') return `${ref}: latest`;
  const exact = EXACT_TAGS[name];
  if (!exact) return `${ref}: ${name} has no known exact tag form (add it to test/support/image-pins.ts)`;
  if (!exact.test(tag)) return `${ref}: ${tag} is not one exact release of ${name} (${exact.source})`;
  return undefined;
}
