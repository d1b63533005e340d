/**
 * A seeding thread of the soak's set-up (bench/scale.ts seedFeeds): computes batches of accounts'
 * earlier syncs (rows and feeds) with shape templates of its own (bench/seed-templates.ts), so the
 * set-up's CPU work runs beside the thread that writes PostgreSQL and storage.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { computeBatch, FeedTemplates } from './seed-templates.ts';

const { publicBase } = workerData as { publicBase: string };
const templates = new FeedTemplates((key) => publicBase + key, { checkFirst: 3, checkEvery: 2000 });
let reported = 0;
parentPort!.on(
  'message',
  (m: { id: number; accounts: Array<{ id: string; username: string; items: unknown[] }>; now: Date }) => {
    try {
      const result = computeBatch(templates, m.accounts, m.now);
      parentPort!.postMessage({
        id: m.id,
        result,
        checked: templates.checked - reported,
        shapes: templates.shapeCount,
      });
    } catch (err) {
      parentPort!.postMessage({
        id: m.id,
        error: (err as Error).message,
        checked: templates.checked - reported,
        shapes: templates.shapeCount,
      });
    }
    reported = templates.checked;
  },
);
