import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { feedJsonSchemaText } from './json-schema.ts';

/** `npm run schema:json`: regenerate feed-v1.schema.json beside this file from the zod schemas. */
const target = fileURLToPath(new URL('./feed-v1.schema.json', import.meta.url));
writeFileSync(target, feedJsonSchemaText());
process.stdout.write(`wrote ${target}\n`);
