import { randomBytes, randomInt } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { startSimulator } from './index.ts';
import type { Simulator, SimulatorOptions } from './types.ts';

/**
 * The simulator's identity kept in a file (the demo's `data/demo/simulator.json`, mode 600):
 * its app id and secret, the control API's secret, the key that signs image links, and its two
 * ports. Created on the first start; later starts read it, so a restarted demo keeps its
 * addresses, MEDIA_ALLOWED_HOSTS and saved links valid (R-SIM-2). A stored port that is taken is
 * an error naming it, unless the caller asks for new ports (which are then stored).
 */

const identitySchema = z.object({
  appId: z.string().regex(/^\d{6,20}$/),
  appSecret: z.string().min(16),
  controlSecret: z.string().min(16),
  linkKey: z.string().regex(/^[0-9a-f]{64}$/),
  port: z.number().int().min(1).max(65535),
  imagePort: z.number().int().min(1).max(65535),
});
export type SimulatorIdentity = z.infer<typeof identitySchema>;

/** A stored port is in use by something else. */
export class SimulatorPortTakenError extends Error {
  override readonly name = 'SimulatorPortTakenError';
  constructor(
    readonly port: number,
    readonly file: string,
  ) {
    super(
      `the simulator's port ${port} (kept in ${file}) is taken: stop what uses it (another demo?), or start with new simulator ports`,
    );
  }
}

/** The identity in `file`; undefined when there is none yet; an error naming the file when it is unreadable. */
export function readIdentity(file: string): SimulatorIdentity | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not JSON: delete it to start the simulator with a new identity`);
  }
  const ok = identitySchema.safeParse(parsed);
  if (!ok.success)
    throw new Error(
      `${file} is not a simulator state file (${ok.error.issues.map((i) => i.path.join('.') || '(file)').join(', ')}): delete it to start with a new identity`,
    );
  return ok.data;
}

export function writeIdentity(file: string, identity: SimulatorIdentity): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(identity, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/**
 * Start a simulator with the identity kept in `file` (made and stored on the first start).
 * `newPorts`: any free ports, stored for the next start (instead of failing when one is taken).
 * appId / appSecret given in `opts` (the configuration) win over the file's.
 */
export async function startSimulatorWithState(
  file: string,
  opts: Omit<SimulatorOptions, 'port' | 'imagePort' | 'controlSecret' | 'linkKey'> & { newPorts?: boolean } = {},
): Promise<{ sim: Simulator; created: boolean }> {
  const { newPorts, ...rest } = opts;
  const stored = readIdentity(file);
  const identity = {
    appId:
      rest.appId ?? stored?.appId ?? String(randomInt(100_000_000, 999_999_999)) + String(randomInt(100_000, 999_999)),
    appSecret: rest.appSecret ?? stored?.appSecret ?? randomBytes(16).toString('hex'),
    controlSecret: stored?.controlSecret ?? randomBytes(24).toString('base64url'),
    linkKey: stored?.linkKey ?? randomBytes(32).toString('hex'),
  };
  const port = newPorts ? 0 : (stored?.port ?? 0);
  const imagePort = newPorts ? 0 : (stored?.imagePort ?? 0);
  let sim: Simulator;
  try {
    sim = await startSimulator({
      ...rest,
      ...identity,
      linkKey: Buffer.from(identity.linkKey, 'hex'),
      port,
      imagePort,
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { port?: number };
    if (e.code === 'EADDRINUSE') throw new SimulatorPortTakenError(e.port ?? (port || imagePort), file);
    throw err;
  }
  const next: SimulatorIdentity = { ...identity, port: sim.port, imagePort: sim.imagePort };
  if (JSON.stringify(next) !== JSON.stringify(stored)) writeIdentity(file, next);
  return { sim, created: stored === undefined };
}
