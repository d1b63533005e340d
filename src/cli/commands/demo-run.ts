import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { EXIT, type CliIO } from '../io.ts';
import { loadConfig } from '../../config.ts';
import { createLogger } from '../../util/logger.ts';
import { startSimulator } from '../../simulator/index.ts';
import { PlatformClient } from '../../platform/client.ts';
import { convertItems, originFromProfile, buildFeed } from '../../convert/index.ts';
import { validateFeed } from '../../schema/validate.ts';
import { createStorage, feedKey } from '../../storage/index.ts';

/**
 * `npm run demo`: the main job on embedded defaults, with the simulator as the platform. Connects
 * a demo account with a short-lived token (exchange, R-TOK-1), reads every page of its media
 * (R-MED-5), converts (R-CNV), validates against schema v1 and writes feeds/<id>.json to the local
 * storage folder, then prints where it is.
 */
export async function demoRunCommand(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { posts: { type: 'string' }, keep: { type: 'boolean' } } });
  const config = loadConfig({ ...io.env, STORAGE_URL: io.env.STORAGE_URL ?? './data/storage' });
  const logger = createLogger({ level: io.env.LOG_LEVEL ?? 'warn' });
  const sim = await startSimulator();
  try {
    const account = sim.createAccount({ username: 'demo.bakery', name: 'Demo Bakery', posts: Number(values.posts ?? 24) });
    const platform = new PlatformClient({
      graphUrl: sim.graphUrl,
      apiVersion: config.GRAPH_API_VERSION,
      oauthTokenUrl: sim.oauthTokenUrl,
      appId: sim.appId,
      appSecret: sim.appSecret,
      clock: sim.clock,
      logger,
      pageSize: config.PAGE_SIZE,
    });
    io.stdout.write(`platform simulator running at ${sim.url}\n`);
    const grant = await platform.exchangeToken(sim.issueShortLivedToken(account.id));
    io.stdout.write(`connected @${account.username}: long-lived token valid until ${grant.expiresAt.toISOString()}\n`);
    const profile = await platform.getProfile(grant.accessToken);
    const listing = await platform.listMedia(grant.accessToken, { pageSize: 10 });
    const { posts, dropped } = convertItems(listing.items, { copyrightItems: config.COPYRIGHT_ITEMS });
    const feed = buildFeed({ origin: originFromProfile(profile, { items: listing.items }), posts, fetchedAt: sim.clock.now(), demo: false });
    const check = validateFeed(feed);
    if (!check.ok) {
      for (const p of check.problems) io.stderr.write(`${p.path}: ${p.message}\n`);
      return EXIT.failed;
    }
    const storage = createStorage(config);
    const key = feedKey(account.id);
    await storage.put(key, Buffer.from(JSON.stringify(feed, null, 2)), { contentType: 'application/json', cacheControl: 'public, max-age=300' });
    io.stdout.write(
      `read ${listing.pages} pages, ${listing.items.length} media items; ${posts.length} posts in the feed, ${dropped.length} dropped (${dropped.map((d) => d.reason).join('; ') || 'none'})\n`,
    );
    const path = config.STORAGE_URL.startsWith('s3://') ? `${config.STORAGE_URL}/${key}` : resolve(io.cwd, config.STORAGE_URL, key);
    io.stdout.write(`feed written: ${path}\nvalidate it: npx feedmirror validate ${path}\n`);
    return EXIT.ok;
  } finally {
    if (!values.keep) await sim.close();
  }
}
