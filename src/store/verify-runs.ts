import type { Db } from './db.ts';

/**
 * The verify_runs table (migrations/011_verify_runs.sql): each `feedmirror verify` and each daily
 * verify of the worker records what it checked and what was wrong, so the health and `doctor`
 * can say when the stores last agreed.
 */

export interface VerifyFinding {
  kind: string;
  accountId?: string;
  key?: string;
  detail: string;
}

export interface VerifyRun {
  trigger: 'cli' | 'worker';
  /** null: every account. */
  accountId: string | null;
  repair: boolean;
  startedAt: Date;
  finishedAt: Date;
  ok: boolean;
  counts: Record<string, number>;
  /** What was still wrong at the end (after the repair, when there was one). */
  problems: VerifyFinding[];
  problemCount: number;
  repaired: VerifyFinding[];
}

/** Lists kept per run: a bucket emptied behind our back must not write a megabyte row. */
export const VERIFY_FINDINGS_KEPT = 200;

export async function saveVerifyRun(db: Db, run: VerifyRun): Promise<void> {
  await db.query(
    `INSERT INTO verify_runs (trigger, account_id, repair, started_at, finished_at, ok, counts, problems, problem_count, repaired)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      run.trigger,
      run.accountId,
      run.repair,
      run.startedAt,
      run.finishedAt,
      run.ok,
      JSON.stringify(run.counts),
      JSON.stringify(run.problems.slice(0, VERIFY_FINDINGS_KEPT)),
      run.problemCount,
      JSON.stringify(run.repaired.slice(0, VERIFY_FINDINGS_KEPT)),
    ],
  );
}

interface VerifyRunRow {
  trigger: 'cli' | 'worker';
  account_id: string | null;
  repair: boolean;
  started_at: Date;
  finished_at: Date;
  ok: boolean;
  counts: Record<string, number>;
  problems: VerifyFinding[];
  problem_count: number;
  repaired: VerifyFinding[];
}

/**
 * The latest finished verify: of every account (a run of all accounts), or, with `accountId`, the
 * latest run that covered that account (all accounts, or that one), its problems narrowed to it.
 * null when verify never ran.
 */
export async function getLastVerify(db: Db, opts: { accountId?: string } = {}): Promise<VerifyRun | null> {
  const { rows } = await db.query<VerifyRunRow>(
    `SELECT * FROM verify_runs
      WHERE account_id IS NULL OR account_id = $1
      ORDER BY finished_at DESC, id DESC LIMIT 1`,
    [opts.accountId ?? null],
  );
  const r = rows[0];
  if (!r) return null;
  const problems = opts.accountId ? r.problems.filter((p) => p.accountId === opts.accountId) : r.problems;
  return {
    trigger: r.trigger,
    accountId: r.account_id,
    repair: r.repair,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    ok: opts.accountId && r.account_id === null ? problems.length === 0 : r.ok,
    counts: r.counts,
    problems,
    problemCount: opts.accountId && r.account_id === null ? problems.length : r.problem_count,
    repaired: opts.accountId ? r.repaired.filter((p) => p.accountId === opts.accountId) : r.repaired,
  };
}
