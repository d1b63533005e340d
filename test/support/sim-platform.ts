import { PlatformClient, type PlatformClientOptions } from '../../src/platform/client.ts';
import type { Simulator } from '../../src/simulator/index.ts';

/**
 * The platform client pointed at the simulator over real HTTP, on the simulator's clock. Every
 * feed-pipeline test builds one; what differs between them (retries, page size, backoff sleeps,
 * app credentials, an observer) is given in `opts`, which overrides the defaults here too.
 */
export function simPlatformClient(sim: Simulator, opts: Partial<PlatformClientOptions> = {}): PlatformClient {
  return new PlatformClient({
    graphUrl: sim.graphUrl,
    apiVersion: 'v25.0',
    oauthTokenUrl: sim.oauthTokenUrl,
    clock: sim.clock,
    ...opts,
  });
}

/** Backoff that waits for nothing: a test's retries happen at once (time moves only by its clock). */
export const noSleep = async (): Promise<void> => undefined;
