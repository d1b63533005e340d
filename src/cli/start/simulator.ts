import { z } from 'zod';
import { EXIT, type CliIO } from '../io.ts';
import { untilStopSignal } from '../signals.ts';
import { followWallClock } from '../../simulator/wall-clock.ts';
import { startSimulator } from '../../simulator/index.ts';
import { MIX_SIZE } from '../../simulator/state.ts';
import type { Simulator } from '../../simulator/types.ts';

/**
 * `feedmirror simulator`: run the platform simulator by hand, print the settings that point
 * feedmirror at it and a ready short-lived token for the first account (a fake token for a fake
 * platform: printing it is the purpose of the command), then run until SIGINT/SIGTERM.
 */

const optionsSchema = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(0),
  imagePort: z.coerce.number().int().min(0).max(65535).default(0),
  host: z.string().min(1).default('127.0.0.1'),
  accounts: z.coerce.number().int().min(1).max(100).default(1),
  posts: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(MIX_SIZE + 2),
  clock: z.enum(['real', 'manual']).default('real'),
});

export const SIMULATOR_USAGE =
  'usage: feedmirror simulator [--port N] [--image-port N] [--host H] [--accounts N] [--posts N] [--clock real|manual]\n' +
  '  --clock real (default) moves the simulated time with the wall clock; manual only through POST /__sim/clock\n';

/** Start, print, and keep running until `until` settles; then close. Exported for tests. */
export type SimulatorOptions = Partial<Record<'port' | 'imagePort' | 'host' | 'accounts' | 'posts' | 'clock', string>>;

export async function runSimulator(
  raw: SimulatorOptions,
  io: CliIO,
  until: (sim: Simulator) => Promise<void>,
): Promise<number> {
  const parsed = optionsSchema.safeParse(raw);
  if (!parsed.success) {
    const what = parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; ');
    io.stderr.write(`feedmirror simulator: ${what}\n${SIMULATOR_USAGE}`);
    return EXIT.usage;
  }
  const o = parsed.data;
  // Real time by default: a worker run by hand on the system clock must agree with the links' oe.
  // The app id and secret come from the same environment feedmirror reads, so both sides agree
  // without the secret ever being printed.
  const appId = io.env.APP_ID?.trim() || undefined;
  const appSecret = io.env.APP_SECRET?.trim() || undefined;
  // The control API's secret, like APP_SECRET: from the environment, never printed.
  const controlSecret = io.env.SIMULATOR_CONTROL_SECRET?.trim() || undefined;
  const sim = await startSimulator({
    host: o.host,
    port: o.port,
    imagePort: o.imagePort,
    start: Date.now(),
    appId,
    appSecret,
    controlSecret,
  });
  const stopFollowing = o.clock === 'real' ? followWallClock(sim) : undefined;
  try {
    const accounts = Array.from({ length: o.accounts }, () => sim.createAccount({ posts: o.posts }));
    const first = accounts[0];
    if (!first) throw new Error('no account created');
    const token = sim.issueShortLivedToken(first.id);
    const lines = [
      `platform simulator listening on ${sim.url} (images on ${sim.imageBaseUrl})`,
      '',
      'Point feedmirror at it:',
      `  GRAPH_URL=${sim.graphUrl}`,
      `  AUTHORIZE_URL=${sim.authorizeUrl}`,
      `  OAUTH_TOKEN_URL=${sim.oauthTokenUrl}`,
      `  MEDIA_ALLOWED_HOSTS=${sim.imageHost}`,
      `  APP_ID=${sim.appId}`,
      appSecret
        ? '  APP_SECRET: the one in this environment (not printed)'
        : '  APP_SECRET: not set in this environment: the simulator made up its own, so token exchanges will fail; set APP_SECRET for both and restart',
      '',
      `accounts: ${accounts.map((a) => `@${a.username} (${a.id})`).join(', ')}`,
      `short-lived token for @${first.username} (fake, valid 1 hour of simulated time; exchange it within the hour):`,
      `  ${token}`,
      '',
      `control API (src/simulator/README.md): SIMULATOR_URL=${sim.url}`,
      controlSecret
        ? '  SIMULATOR_CONTROL_SECRET: the one in this environment (not printed); `feedmirror simulator accounts` and the other verbs use it'
        : '  SIMULATOR_CONTROL_SECRET: not set in this environment: the simulator made up its own, so the control API refuses every call; set it for both and restart',
      `clock: ${o.clock === 'real' ? 'follows the wall clock' : 'manual'}; press Ctrl-C to stop`,
    ];
    io.stdout.write(lines.join('\n') + '\n');
    await until(sim);
    return EXIT.ok;
  } finally {
    stopFollowing?.();
    await sim.close();
  }
}

export async function simulatorCommand(raw: SimulatorOptions, io: CliIO): Promise<number> {
  return runSimulator(raw, io, async () => {
    await untilStopSignal();
  });
}
