/**
 * Node 22 LTS is the recommended runtime; Node 20 keeps working. On Node 20 the AWS SDK emits an
 * eight-line NodeVersionSupportWarning on every S3 client: it becomes one line (or none with
 * NODE_OPTIONS=--disable-warning=NodeVersionSupportWarning, or `silent`). Every other warning is
 * untouched. Shared by the CLI (bin/feedmirror.js) and the benchmark's processes.
 */
export function quietNodeVersionWarning({ silent = false } = {}) {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= 22) return;
  const flags = `${process.env.NODE_OPTIONS ?? ''} ${process.execArgv.join(' ')}`;
  const silenced = silent || /--disable-warning[= ]NodeVersionSupportWarning\b|--no-warnings\b/.test(flags);
  const original = process.emitWarning.bind(process);
  let told = false;
  process.emitWarning = (warning, ...rest) => {
    const type = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
    const text = typeof warning === 'string' ? warning : `${warning?.name ?? ''}: ${warning?.message ?? ''}`;
    // The SDK emits it as a plain Warning whose text starts with the name, so Node's own
    // --disable-warning=NodeVersionSupportWarning does not catch it.
    if (type === 'NodeVersionSupportWarning' || text.startsWith('NodeVersionSupportWarning')) {
      if (!silenced && !told) {
        told = true;
        process.stderr.write(
          `feedmirror: Node ${process.versions.node} works; Node 22 LTS is recommended (the AWS SDK is ending support for Node 20)\n`,
        );
      }
      return;
    }
    return original(warning, ...rest);
  };
}
