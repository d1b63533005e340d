import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, inject, it } from 'vitest';
import { INVARIANTS } from '../../bench/chaos/checker.ts';
import { REGRESSION_SEEDS } from '../../bench/chaos/regression-seeds.ts';
import { formatReport } from '../../bench/chaos/report.ts';
import { runChaos } from '../../bench/chaos/run.ts';

/**
 * The chaos soak's short profile: one simulated day, 50 accounts, the first regression seed (a
 * seed that once found a defect). The real feedmirror (two workers and serve as processes) runs
 * against the simulator with every fault kind injected at least once, overlapping, and the
 * independent checker must find no violation of any invariant. Its names are its own (database
 * fm_chaos_*, Redis server of its own, prefix fmchaos:*, folder fm-chaos-*).
 */
const historyDir = mkdtempSync(join(tmpdir(), 'fm-chaos-short-history-'));
afterAll(() => rm(historyDir, { recursive: true, force: true }));

it('one simulated day of overlapping faults over 50 accounts: every invariant checked, none violated', async () => {
  const seed = REGRESSION_SEEDS[0]!.seed;
  const report = await runChaos({
    seed,
    days: 1,
    accounts: 50,
    postsMean: 3,
    historyFile: join(historyDir, `chaos-seed-${seed}.history.jsonl`),
    databaseUrl: inject('databaseUrl'),
  });
  // The report in the test's output: the violations with their evidence, the recovery times.
  process.stderr.write(formatReport(report));
  expect(report.violations).toEqual([]);
  expect(Object.keys(report.faults).length).toBeGreaterThanOrEqual(12);
  for (const name of INVARIANTS) expect(report.invariants[name].checks, name).toBeGreaterThan(1);
}, 900_000);
