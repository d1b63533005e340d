import { SOURCE } from '../platform/identifiers.ts';
import type { Feed, Origin, Post } from '../schema/v1.ts';
import { SchemaViolationError, validateFeed } from '../schema/validate.ts';

export interface BuildFeedInput {
  origin: Origin;
  posts: Post[];
  /** When the posts were read from the platform (from the injected clock). */
  fetchedAt: Date;
  /** R-SCH-11: true until an account is connected. */
  demo: boolean;
  nextCursor?: string;
}

/** Assemble a schema v1 feed and check it; throws SchemaViolationError naming every problem. */
export function buildFeed(input: BuildFeedInput): Feed {
  const feed = {
    schemaVersion: 1 as const,
    source: SOURCE,
    origin: input.origin,
    posts: input.posts,
    fetchedAt: input.fetchedAt.toISOString(),
    demo: input.demo,
    ...(input.nextCursor !== undefined ? { nextCursor: input.nextCursor } : {}),
  };
  const r = validateFeed(feed);
  if (!r.ok) throw new SchemaViolationError('feed', r.problems);
  return r.feed;
}
