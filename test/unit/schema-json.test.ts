import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FEED_V1_SCHEMA_ID, feedJsonSchema, feedJsonSchemaText } from '../../src/schema/json-schema.ts';
import { validateFeed } from '../../src/schema/validate.ts';

const committedPath = new URL('../../src/schema/feed-v1.schema.json', import.meta.url);

describe('feed-v1.schema.json', () => {
  it('the committed file is exactly what the zod schemas generate (run `npm run schema:json` after changing them)', () => {
    expect(readFileSync(committedPath, 'utf8')).toBe(feedJsonSchemaText());
  });

  it('is draft 2020-12 with an $id and a title', () => {
    const s = feedJsonSchema();
    expect(s.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(s.$id).toBe(FEED_V1_SCHEMA_ID);
    expect(typeof s.title).toBe('string');
  });

  it('R-SCH-7 and R-SCH-8 are expressed in the JSON Schema: Post is a oneOf on type', () => {
    const post = (feedJsonSchema().$defs as Record<string, JsonSchema>).Post!;
    const branches = post.oneOf!;
    const typeValues = (b: JsonSchema) => b.properties!.type!.enum ?? [b.properties!.type!.const];
    const visual = branches.find((b) => typeValues(b).includes('image'))!;
    expect(typeValues(visual).sort()).toEqual(['carousel', 'image', 'video']);
    expect(visual.required).toContain('thumbnailUrl');
    const link = branches.find((b) => typeValues(b).includes('link'))!;
    expect(link.required).toContain('link');
    const text = branches.find((b) => typeValues(b).includes('text'))!;
    expect(text.required).not.toContain('thumbnailUrl');
    expect(text.required).not.toContain('link');
  });

  it('R-SCH-5 Stats is closed in the JSON Schema too', () => {
    const stats = (feedJsonSchema().$defs as Record<string, JsonSchema>).Stats!;
    expect(stats.additionalProperties).toBe(false);
    expect(Object.keys(stats.properties!).sort()).toEqual(['comments', 'likes', 'shares', 'views']);
  });
});

/* A tiny JSON Schema checker for the keywords the generated schema uses, so the committed JSON
 * Schema can be compared with zod on the same documents without a new dependency. It throws on a
 * keyword it does not know, so a generator change cannot make the comparison silently weaker. */
interface JsonSchema {
  $schema?: string;
  $id?: string;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  title?: string;
  description?: string;
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
}
const KNOWN = new Set([
  '$schema',
  '$id',
  '$ref',
  '$defs',
  'title',
  'description',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'pattern',
  'format',
  'minLength',
  'maxLength',
  'minItems',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'oneOf',
  'anyOf',
]);

function conforms(value: unknown, s: JsonSchema, root: JsonSchema): boolean {
  for (const k of Object.keys(s)) if (!KNOWN.has(k)) throw new Error(`tiny checker: unsupported keyword ${k}`);
  if (s.$ref) {
    const name = s.$ref.replace('#/$defs/', '');
    return conforms(value, root.$defs![name]!, root);
  }
  if (s.type) {
    const t = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
    if (s.type === 'integer' ? !Number.isInteger(value) : t !== s.type) return false;
  }
  if (s.const !== undefined && value !== s.const) return false;
  if (s.enum && !s.enum.includes(value)) return false;
  if (typeof value === 'string') {
    // JSON Schema counts a string's length in code points, which is what spreading it gives.
    // eslint-disable-next-line @typescript-eslint/no-misused-spread
    if (s.minLength !== undefined && [...value].length < s.minLength) return false;
    // eslint-disable-next-line @typescript-eslint/no-misused-spread
    if (s.maxLength !== undefined && [...value].length > s.maxLength) return false;
    if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(value)) return false;
  }
  if (typeof value === 'number') {
    if (s.minimum !== undefined && value < s.minimum) return false;
    if (s.maximum !== undefined && value > s.maximum) return false;
    if (s.exclusiveMinimum !== undefined && value <= s.exclusiveMinimum) return false;
  }
  if (Array.isArray(value) && s.minItems !== undefined && value.length < s.minItems) return false;
  if (Array.isArray(value) && s.items && !value.every((v) => conforms(v, s.items!, root))) return false;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    for (const r of s.required ?? []) if (!(r in obj)) return false;
    for (const [k, v] of Object.entries(obj)) {
      const prop = s.properties?.[k];
      if (prop) {
        if (!conforms(v, prop, root)) return false;
      } else if (s.additionalProperties === false) return false;
      else if (typeof s.additionalProperties === 'object' && !conforms(v, s.additionalProperties, root)) return false;
    }
  }
  if (s.oneOf && s.oneOf.filter((b) => conforms(value, b, root)).length !== 1) return false;
  if (s.anyOf && !s.anyOf.some((b) => conforms(value, b, root))) return false;
  return true;
}

describe('the JSON Schema and zod agree', () => {
  const schema = JSON.parse(readFileSync(committedPath, 'utf8')) as JsonSchema;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const base = (): any => JSON.parse(readFileSync(new URL('../fixtures/feed-v1-valid.json', import.meta.url), 'utf8'));
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const cases: Array<[string, (f: any) => void]> = [
    ['unchanged', () => undefined],
    ['broken fixture', () => undefined],
    ['schemaVersion 2', (f) => (f.schemaVersion = 2)],
    ['image without thumbnailUrl', (f) => delete f.posts[0].thumbnailUrl],
    ['text without thumbnailUrl', (f) => delete f.posts[4].thumbnailUrl],
    ['link without link', (f) => delete f.posts[5].link],
    ['stats extra key', (f) => (f.posts[0].stats.saves = 1)],
    ['stats zero', (f) => (f.posts[0].stats.likes = 0)],
    ['stats negative', (f) => (f.posts[0].stats.likes = -1)],
    ['width 0', (f) => (f.posts[0].media[0].width = 0)],
    ['mime text/html', (f) => (f.posts[0].media[0].mime = 'text/html')],
    ['url ftp', (f) => (f.posts[0].url = 'ftp://x')],
    ['publishedAt +0000', (f) => (f.posts[0].publishedAt = '2026-01-01T00:00:00+0000')],
    ['publishedAt +05:30', (f) => (f.posts[0].publishedAt = '2026-01-01T00:00:00+05:30')],
    ['type audio', (f) => (f.posts[0].type = 'audio')],
    ['status draft', (f) => (f.posts[0].status = 'draft')],
    ['origin kind user', (f) => (f.origin.kind = 'user')],
    ['unknown top-level key', (f) => (f.generator = 'x')],
    ['unknown post key', (f) => (f.posts[0].pinned = true)],
    ['nextCursor empty', (f) => (f.nextCursor = '')],
    ['demo missing', (f) => delete f.demo],
    ['raw anything', (f) => (f.posts[0].raw = [1, 'two', null])],
    // Extension fields: optional, validated when present.
    ['extended fixture', () => undefined],
    ['extended broken fixture', () => undefined],
    [
      'sizes on a plain feed',
      (f) =>
        (f.posts[0].media[0].sizes = [
          { url: 'https://m.example/a-w160.webp', width: 160, height: 160, mime: 'image/webp' },
        ]),
    ],
    ['sizes empty', (f) => (f.posts[0].thumbnailSizes = [])],
    [
      'size width fractional',
      (f) =>
        (f.posts[0].thumbnailSizes = [
          { url: 'https://m.example/a.webp', width: 160.5, height: 160, mime: 'image/webp' },
        ]),
    ],
    [
      'size mime video',
      (f) =>
        (f.posts[0].thumbnailSizes = [{ url: 'https://m.example/a.webp', width: 160, height: 160, mime: 'video/mp4' }]),
    ],
    ['size without url', (f) => (f.posts[0].thumbnailSizes = [{ width: 160, height: 160, mime: 'image/webp' }])],
    ['placeholder colour only', (f) => (f.posts[0].thumbnailPlaceholder = { color: '#aabbcc' })],
    ['placeholder colour name', (f) => (f.posts[0].thumbnailPlaceholder = { color: 'red' })],
    [
      'placeholder thumbhash not base64',
      (f) => (f.posts[0].thumbnailPlaceholder = { color: '#aabbcc', thumbhash: 'no!' }),
    ],
  ];

  const fixture = (name: string) =>
    JSON.parse(readFileSync(new URL(`../fixtures/${name}.json`, import.meta.url), 'utf8'));
  const named: Record<string, string> = {
    'broken fixture': 'feed-v1-broken',
    'extended fixture': 'feed-v1-extended',
    'extended broken fixture': 'feed-v1-extended-broken',
  };

  it.each(cases)('%s', (name, mutate) => {
    const doc = named[name] ? fixture(named[name]) : base();
    mutate(doc);
    expect(conforms(doc, schema, schema)).toBe(validateFeed(doc).ok);
  });

  it('the checker is not trivially true', () => {
    expect(conforms(base(), schema, schema)).toBe(true);
    expect(conforms({}, schema, schema)).toBe(false);
  });
});
