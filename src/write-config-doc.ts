import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configurationPage } from './config-doc.ts';

/** `npm run docs:config`: regenerate docs/configuration.md from the settings in src/config.ts. */
const target = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
writeFileSync(target, configurationPage());
process.stdout.write(`wrote ${target}\n`);
