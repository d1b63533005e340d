import { describe, expect, it } from 'vitest';
import { useStage, type Stage } from './stage.ts';

/**
 * README (docs/feeds.md) "Re-encoding copies" to WebP + AVIF, as written: the workers re-encode
 * with their own settings, so the formats are changed in the workers' .env and the workers
 * restarted, then `feedmirror media rebuild`. Setting the formats for the command alone is refused
 * in one line naming the workers' value, instead of announcing formats no worker uses (R-SET-1).
 */
describe('journey: media rebuild to WebP + AVIF', () => {
  let stage: Stage;
  useStage('mediarebuild', (s) => (stage = s));

  const mimes = async (accountId: string) =>
    new Set([...JSON.stringify(await stage.feed(accountId)).matchAll(/"mime":"(image\/[a-z]+)"/g)].map((m) => m[1]));

  it('the worker rebuilds the copies and the published feed carries webp and avif sizes', async () => {
    let worker = await stage.startWorker();
    const { id, add } = await stage.connect({ posts: 3 });
    expect(add.code, add.stderr).toBe(0);
    await stage.until(async () => (await stage.feed(id))?.demo === false, 'the first feed', 30_000);
    expect(await mimes(id)).not.toContain('image/avif');
    expect(await mimes(id)).toContain('image/webp');

    // The formats set for the command alone: the running worker would not use them.
    const alone = await stage.cli(['media', 'rebuild'], { env: { MEDIA_VARIANT_FORMATS: 'webp,avif' } });
    expect(alone.code).toBe(1);
    expect(alone.stdout).toBe('');
    expect(alone.stderr.trim().split('\n')).toHaveLength(1);
    expect(alone.stderr).toContain(
      'the running workers re-encode with MEDIA_VARIANT_FORMATS=webp, not MEDIA_VARIANT_FORMATS=webp,avif as set here',
    );

    // As the README says: the workers' .env changed, the workers restarted, then the command.
    const env = { MEDIA_VARIANT_FORMATS: 'webp,avif' };
    await worker.stop();
    worker = await stage.startWorker({ env });
    const run = await stage.cli(['media', 'rebuild'], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /^queued a media rebuild for 1 account \(widths 160,320, formats webp,avif: the settings of the running worker\)/,
    );
    await stage
      .until(async () => (await mimes(id)).has('image/avif'), 'avif sizes in the published feed', 60_000)
      .catch((err: Error) => {
        throw new Error(`${err.message}\n${worker.output().slice(-3000)}`);
      });
    const feed = (await stage.feed(id))!;
    expect([...(await mimes(id))].sort()).toEqual(['image/avif', 'image/jpeg', 'image/webp']); // the original tops the ladder
    // Every size the feed lists is there for a site to load.
    const urls = [...JSON.stringify(feed).matchAll(/"url":"([^"]+\.(?:webp|avif))"/g)].map((m) => m[1]!);
    expect(urls.length).toBeGreaterThan(0);
    for (const u of urls) {
      const key = u.slice(u.indexOf('media/'));
      expect((await stage.fetchPublic(key)).status, key).toBe(200);
    }
    // The worker logs the rebuild once the feed is written.
    await stage.until(() => /"msg":"media rebuilt"/.test(worker.output()), 'the worker to log the rebuild', 30_000);
  }, 180_000);
});
