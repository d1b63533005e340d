import { describe, expect, it } from 'vitest';
import type { Feed } from '../../src/schema/v1.ts';
import { HOUR } from '../../src/util/clock.ts';
import { useStage, type Stage } from './stage.ts';

/**
 * docs "Feeds": the platform glitching, played by the simulator's faults, while the operator syncs
 * with `feedmirror sync <id> --wait`. An empty page without paging once (it looks exactly like an
 * account that deleted everything), a post whose links carry no `oe`, a known post that comes back
 * malformed: the feed a site reads keeps its posts (R-OWN-6, R-OWN-7, R-OWN-8, R-OWN-9). Before,
 * the empty page emptied the feed and deleted every copy, the link without oe stopped the
 * account's syncs for good, and the malformed post was dropped with its copies.
 */
describe('journey: the platform glitches, the feed keeps its posts', () => {
  let stage: Stage;
  useStage('glitches', (s) => (stage = s));

  const ids = (f: Feed | null) => (f ? f.posts.map((p) => p.id) : []);
  async function everyCoverLoads(f: Feed) {
    for (const p of f.posts)
      expect((await stage.fetchPublic(p.thumbnailUrl!.slice(stage.env.MEDIA_PUBLIC_URL!.length))).status, p.id).toBe(
        200,
      );
  }

  it('an empty listing once, a link without oe, a malformed known post: the feed keeps every post', async () => {
    const acc = await stage.connect({ username: 'corner.florist', posts: 6 });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    const first = await stage.cli(['sync', acc.id, '--wait']);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const before = (await stage.feed(acc.id))!;
    expect(before.demo).toBe(false);
    expect(before.posts.length).toBeGreaterThan(3);

    // 1. One empty page without paging: held, nothing removed.
    stage.sim.injectFault({ path: /\/media$/, kind: 'json' });
    await stage.advance(HOUR);
    const empty = await stage.cli(['sync', acc.id, '--wait']);
    expect(empty.stdout + empty.stderr).toMatch(
      /removal held: the listing would remove \d+ of the \d+ published posts/,
    );
    expect(empty.stdout).toContain(`feedmirror feeds confirm-removal ${acc.id}`);
    const afterEmpty = (await stage.feed(acc.id))!;
    expect(ids(afterEmpty)).toEqual(ids(before));
    await everyCoverLoads(afterEmpty);

    // The next good listing (the glitch is over) ends the hold: nothing to confirm.
    await stage.advance(HOUR);
    expect((await stage.cli(['sync', acc.id, '--wait'])).code).toBe(0);
    const confirm = await stage.cli(['feeds', 'confirm-removal', acc.id, '--json']);
    expect(confirm.code).toBe(1);
    expect(confirm.stderr).toContain('no removal is held');

    // 2. A new post whose links carry no oe is copied and published; syncs go on.
    const noOe = stage.sim.addPost(acc.id, { kind: 'image', caption: 'links without oe', linksWithoutOe: true });
    await stage.advance(HOUR);
    const withNoOe = await stage.cli(['sync', acc.id, '--wait']);
    expect(withNoOe.code, withNoOe.stdout + withNoOe.stderr).toBe(0);
    const afterNoOe = (await stage.feed(acc.id))!;
    expect(ids(afterNoOe)).toEqual([noOe, ...ids(before)]);

    // 3. A known post comes back malformed: it keeps its last good version.
    const target = afterNoOe.posts[2]!;
    stage.sim.updatePost(acc.id, target.id, { glitch: 'unknown-media-type' });
    await stage.advance(HOUR);
    const malformed = await stage.cli(['sync', acc.id, '--wait']);
    expect(malformed.code, malformed.stderr).toBe(0);
    expect(malformed.stderr).toContain(`unknown media_type \\"HOLOGRAM\\"`); // said, and left out of this listing only
    const afterMalformed = (await stage.feed(acc.id))!;
    expect(ids(afterMalformed)).toEqual(ids(afterNoOe));
    expect(afterMalformed.posts.find((p) => p.id === target.id)).toEqual(target);
    await everyCoverLoads(afterMalformed);
  }, 180_000);
});
