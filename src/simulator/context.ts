import type { LinkSigner } from './links.ts';
import type { MediaRenderer } from './media.ts';
import type { SimState } from './state.ts';

/** What every handler of the simulator shares. */
export interface SimContext {
  state: SimState;
  signer: LinkSigner;
  renderer: MediaRenderer;
  appId: string;
  appSecret: string;
  linkLifetimeMs: number;
  codeResponseShape: 'flat' | 'data';
  maxLimit: number;
  shortPages: boolean;
  baseUrl(): string;
  graphUrl(): string;
  autoApprove(): string | null;
}

/** A request as handlers see it. */
export interface SimRequest {
  method: string;
  /** Pathname below the host's prefix, e.g. '/v25.0/me/media' for the graph host. */
  path: string;
  query: Record<string, string>;
  form?: Record<string, string> | undefined;
}
