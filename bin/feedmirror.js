#!/usr/bin/env node
// feedmirror runs from its TypeScript sources through tsx (no build step to forget).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
