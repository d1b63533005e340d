import type { Db } from './db.ts';

/**
 * The settings a running worker uses for work that commands queue for it (R-SET-1): commands read
 * them here to act with the workers' settings, or to refuse naming the difference. Each worker
 * records its own at start, refreshes seen_at while it runs and deletes its row when it stops.
 * Liveness is judged in database time: it is about real processes, not the domain clock.
 */
export interface WorkerSettings {
  MEDIA_VARIANT_WIDTHS: number[];
  MEDIA_VARIANT_FORMATS: string[];
  WEBHOOK_ALLOW_PRIVATE: boolean;
}

export interface LiveWorker {
  workerId: string;
  host: string;
  pid: number;
  startedAt: Date;
  settings: WorkerSettings;
}

/** A worker that has not refreshed its row for this long is taken for gone (it refreshes every 30 s). */
export const WORKER_SEEN_WITHIN_SECONDS = 90;
export const WORKER_HEARTBEAT_MS = 30_000;

export async function recordWorkerSettings(
  db: Db,
  w: { workerId: string; host: string; pid: number; settings: WorkerSettings },
): Promise<void> {
  await db.query(
    `INSERT INTO worker_settings (worker_id, host, pid, settings) VALUES ($1, $2, $3, $4)
     ON CONFLICT (worker_id) DO UPDATE SET settings = EXCLUDED.settings, seen_at = now()`,
    [w.workerId, w.host, w.pid, JSON.stringify(w.settings)],
  );
}

/** The worker is still there; also drops rows of workers gone for a day (killed, never cleaned up). */
export async function touchWorker(db: Db, workerId: string): Promise<void> {
  await db.query('UPDATE worker_settings SET seen_at = now() WHERE worker_id = $1', [workerId]);
  await db.query("DELETE FROM worker_settings WHERE seen_at < now() - interval '1 day'");
}

export async function forgetWorker(db: Db, workerId: string): Promise<void> {
  await db.query('DELETE FROM worker_settings WHERE worker_id = $1', [workerId]);
}

/** The workers seen within WORKER_SEEN_WITHIN_SECONDS, oldest first. */
export async function liveWorkers(db: Db): Promise<LiveWorker[]> {
  const { rows } = await db.query<{
    worker_id: string;
    host: string;
    pid: number;
    started_at: Date;
    settings: WorkerSettings;
  }>(
    `SELECT worker_id, host, pid, started_at, settings FROM worker_settings
      WHERE seen_at > now() - make_interval(secs => $1) ORDER BY started_at, worker_id`,
    [WORKER_SEEN_WITHIN_SECONDS],
  );
  return rows.map((r) => ({
    workerId: r.worker_id,
    host: r.host,
    pid: r.pid,
    startedAt: r.started_at,
    settings: r.settings,
  }));
}

/**
 * The workers' value of some settings, when every live worker agrees: `{ agreed: value }`;
 * `{ none: true }` when no worker runs; `{ disagree: [...] }` with each distinct value and how many
 * workers run it otherwise.
 */
export function agreedSettings<T>(
  workers: LiveWorker[],
  pick: (s: WorkerSettings) => T,
): { agreed: T; workers: number } | { none: true } | { disagree: Array<{ value: T; workers: number }> } {
  if (!workers.length) return { none: true };
  const groups = new Map<string, { value: T; workers: number }>();
  for (const w of workers) {
    const value = pick(w.settings);
    const key = JSON.stringify(value);
    const g = groups.get(key);
    if (g) g.workers++;
    else groups.set(key, { value, workers: 1 });
  }
  const all = [...groups.values()];
  return all.length === 1 ? { agreed: all[0]!.value, workers: all[0]!.workers } : { disagree: all };
}
