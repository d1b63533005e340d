/** See quiet-node-warning.js: the AWS SDK's Node 20 warning as one line, or none when `silent`. */
export function quietNodeVersionWarning(opts?: { silent?: boolean }): void;
