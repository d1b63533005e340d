import { z } from 'zod';
import { feedSchema, v1Registry } from './v1.ts';

/** The $id of the published JSON Schema; a URN because feedmirror owns no web address. */
export const FEED_V1_SCHEMA_ID = 'urn:feedmirror:schema:feed-v1';

/**
 * The JSON Schema (draft 2020-12) of a schema v1 feed, generated from the zod schemas so the two
 * cannot drift (a test compares it with the committed feed-v1.schema.json). Post is a oneOf on
 * `type`, which carries R-SCH-7 and R-SCH-8 into the JSON Schema.
 */
export function feedJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(feedSchema, { target: 'draft-2020-12', metadata: v1Registry, io: 'output' });
  const { $schema, ...rest } = generated;
  return {
    $schema,
    $id: FEED_V1_SCHEMA_ID,
    title: 'Portable social feed, schema v1',
    description:
      'A feed of posts from one origin. Unknown keys are allowed (forward compatibility) except in Stats. Generated from src/schema/v1.ts by `npm run schema:json`: do not edit by hand.',
    ...rest,
  };
}

/** The file's exact text: stable key order, two-space indent, trailing newline. */
export function feedJsonSchemaText(): string {
  return JSON.stringify(feedJsonSchema(), null, 2) + '\n';
}
