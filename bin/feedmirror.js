#!/usr/bin/env node
// feedmirror runs from its TypeScript sources through tsx (no build step to forget).
import { register } from 'tsx/esm/api';
import { quietNodeVersionWarning } from './quiet-node-warning.js';

quietNodeVersionWarning();
register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
