import { describe, expect, it } from 'vitest';
import { useStage, type Stage } from './stage.ts';

/**
 * The README's first real-app journey on the stage: init's .env filled in, `doctor`,
 * an account connected from the CLI, a worker, its feed published and readable as a site reads it, and the
 * dashboard listing it. Also the stage's own check: the other journeys stand on it.
 */
describe('journey: init, doctor, connect from the CLI, a worker, read the feed', () => {
  let stage: Stage;
  useStage('firstrun', (s) => (stage = s));

  it('publishes the connected account and the operator sees it everywhere', async () => {
    const doctor = await stage.cli(['doctor']);
    expect(doctor.stdout).toMatch(/^ready/m);
    const acc = await stage.connect({ username: 'corner.bakery', posts: 5 });
    expect(acc.add.code, acc.add.stderr).toBe(0);
    expect(acc.add.stdout).toContain('connected @corner.bakery');
    const w = await stage.startWorker();
    await stage
      .until(async () => (await stage.feed(acc.id))?.demo === false, 'the first real feed', 60_000)
      .catch((err: Error) => {
        throw new Error(`${err.message}; the worker said:\n${w.output().slice(-6000)}`);
      });
    const feed = (await stage.feed(acc.id))!;
    expect(feed.posts).toHaveLength(5);
    const list = await stage.cli(['accounts', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    const rows = JSON.parse(list.stdout) as Array<{ id: string; username: string }>;
    expect(rows.map((r) => r.username)).toEqual(['corner.bakery']);
    const serve = await stage.startServe();
    const dash = await serve.login();
    const overview = await dash.get('/dashboard');
    expect(overview.status).toBe(200);
    expect(overview.html).toContain('corner.bakery');
    const image = await fetch(feed.posts[0]!.thumbnailUrl!);
    expect(image.status).toBe(200);
  }, 120_000);
});
