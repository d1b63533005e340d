import type { z } from 'zod';
import { feedSchema, postBaseSchema, postSchema, POST_TYPES, STATS_KEYS, type Feed, type Post } from './v1.ts';

/** One thing wrong with a document: where (a JSON path such as `$.posts[3].thumbnailUrl`) and what. */
export interface Problem {
  path: string;
  message: string;
}

export type FeedValidation = { ok: true; feed: Feed } | { ok: false; problems: Problem[] };
export type PostValidation = { ok: true; post: Post } | { ok: false; problems: Problem[] };

/** Thrown where an invalid feed or post is a bug of ours (buildFeed, the demo), with every problem. */
export class SchemaViolationError extends Error {
  constructor(
    what: string,
    readonly problems: Problem[],
  ) {
    super(`${what} does not satisfy schema v1: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
    this.name = 'SchemaViolationError';
  }
}

/** Check a whole feed against schema v1; lists every problem, not just the first. */
export function validateFeed(input: unknown): FeedValidation {
  const r = feedSchema.safeParse(input, { error: plainMessage });
  if (r.success) return { ok: true, feed: r.data };
  return { ok: false, problems: toProblems(r.error.issues, input, []) };
}

/** Check one post; paths start at the post (`$.thumbnailUrl`). */
export function validatePost(input: unknown): PostValidation {
  const r = postSchema.safeParse(input, { error: plainMessage });
  if (r.success) return { ok: true, post: r.data };
  return { ok: false, problems: toProblems(r.error.issues, input, []) };
}

/** Format a path array as a JSON path: `$.posts[3].thumbnailUrl`, `$["odd key"]`. */
export function jsonPath(path: readonly PropertyKey[]): string {
  let out = '$';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && /^[A-Za-z_$][\w$]*$/.test(seg)) out += `.${seg}`;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out;
}

function toProblems(issues: readonly z.core.$ZodIssue[], input: unknown, prefix: PropertyKey[]): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      // One line per key, at the key's own path: the only closed object is Stats (R-SCH-5).
      const allowed = path[path.length - 1] === 'stats' ? ` (stats holds only ${STATS_KEYS.join(', ')})` : '';
      for (const key of issue.keys)
        problems.push({ path: jsonPath([...path, key]), message: `unknown key, not allowed${allowed}` });
      continue;
    }
    if (issue.code === 'invalid_union' && issue.path[issue.path.length - 1] === 'type' && 'discriminator' in issue) {
      // A post whose type is missing or unknown matches no branch: check it against the common
      // fields instead, so its other problems are listed too (the type problem comes with them).
      const postPath = path.slice(0, -1);
      const post = at(input, postPath.slice(prefix.length));
      const base = postBaseSchema.safeParse(post, { error: plainMessage });
      if (!base.success) {
        problems.push(...toProblems(base.error.issues, post, postPath));
        continue;
      }
    }
    problems.push({ path: jsonPath(path), message: issue.message });
  }
  return problems;
}

function at(value: unknown, path: readonly PropertyKey[]): unknown {
  let v = value;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[seg];
  }
  return v;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string')
    return `a string (${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)})`;
  return `${typeof value} ${JSON.stringify(value)}`; // a number or a boolean: all JSON has left
}

const article: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
};

/**
 * Plain words for zod's generic issues. Messages set on the schema itself (URL, MIME, date-time,
 * "required when type is ...") take precedence over this map.
 */
function plainMessage(iss: z.core.$ZodRawIssue): string | undefined {
  switch (iss.code) {
    case 'invalid_type':
      if (iss.input === undefined) return 'required';
      return `must be ${article[iss.expected] ?? iss.expected}, got ${describe(iss.input)}`;
    case 'invalid_value': {
      const allowed = iss.values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
      const wanted = iss.values.length === 1 ? allowed : `one of ${allowed}`;
      if (iss.input === undefined) return `required (${wanted})`;
      return `must be ${wanted}, got ${describe(iss.input)}`;
    }
    case 'invalid_union':
      if ('discriminator' in iss) {
        const input =
          iss.input !== null && typeof iss.input === 'object' ? (iss.input as { type?: unknown }).type : undefined;
        return input === undefined
          ? `required (one of ${POST_TYPES.join(', ')})`
          : `must be one of ${POST_TYPES.join(', ')}, got ${describe(input)}`;
      }
      return undefined;
    case 'too_small':
      if (iss.origin === 'string' && Number(iss.minimum) === 1) return 'must not be empty';
      return `must be ${iss.inclusive ? '>=' : '>'} ${String(iss.minimum)}`;
    default:
      return undefined;
  }
}
