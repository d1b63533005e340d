/**
 * The soak's growth table and chart from the runs' JSON (`npm run bench -- --scale N` writes
 * bench/results/scale-N.json):
 *
 *   node --import tsx bench/soak-report.ts [--out docs/bench/soak-growth.svg] [--extrapolate 100000]
 *     [--downtime docs/bench/downtime-10000.json ...] bench/results/scale-*.json
 *
 * Prints a markdown table (one column per run) on stdout and writes an SVG: each per-account
 * figure against the number of accounts, relative to the smallest run (1 = no growth per account).
 * --extrapolate N adds a column for N accounts that was not measured, marked as such: worker CPU
 * scaled by the accounts (syncs per hour grow with them), per-account sizes and lateness held.
 * --downtime adds the catch-up after 3 days down (`npm run -s bench -- --downtime N --json`) to
 * the run of the same size: accounts synced per second and the worker's CPU per account in it
 * (over the counted window when the run was stopped: `finished: false`, marked as such).
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { writeChart } from './chart.ts';

interface Run {
  accounts: number;
  postsPerAccount: number;
  imagesPerAccount: number;
  cpuPercentOfOneCore: number;
  p50LatenessSeconds: number;
  p99LatenessSeconds: number;
  copiesBeforeDeadline: number;
  copiesAfterDeadline: number;
  redisBytesPerAccount: number;
  postgresBytesPerAccount: number;
  storageObjectsPerAccount: number;
  workerPeakRssMb: number;
  catchUpSyncsPerSecond: number;
  /** From a --downtime run of the same size, when one was given. */
  downtimeAccountsPerSecond?: number;
  downtimeCpuMsPerAccount?: number;
  downtimeMinutesToSyncAll?: number;
  downtimeFinished?: boolean;
  extrapolated?: boolean;
}

/** What the report reads of a `--downtime N --json` run. */
interface DowntimeRun {
  accounts: number;
  finished?: boolean;
  catchUp: {
    accountsSyncedPerSecond: number;
    workerCpuMsPerAccount: number;
    secondsToSyncAll?: number;
    untilAllSyncedSeconds: number;
  };
}

const FIGURES: Array<{ key: keyof Run; label: string; fmt: (v: number) => string; perAccount: boolean }> = [
  { key: 'postsPerAccount', label: 'posts per account', fmt: (v) => v.toFixed(1), perAccount: false },
  { key: 'imagesPerAccount', label: 'images per account', fmt: (v) => v.toFixed(1), perAccount: false },
  { key: 'cpuPercentOfOneCore', label: 'worker CPU, % of one core', fmt: (v) => v.toFixed(1), perAccount: false },
  { key: 'p50LatenessSeconds', label: 'lateness p50 (s)', fmt: (v) => v.toFixed(2), perAccount: false },
  { key: 'p99LatenessSeconds', label: 'lateness p99 (s)', fmt: (v) => v.toFixed(2), perAccount: false },
  { key: 'copiesAfterDeadline', label: 'copies after their deadline', fmt: (v) => v.toFixed(0), perAccount: false },
  { key: 'redisBytesPerAccount', label: 'Redis KB per account', fmt: (v) => (v / 1024).toFixed(1), perAccount: true },
  {
    key: 'postgresBytesPerAccount',
    label: 'PostgreSQL KB per account',
    fmt: (v) => (v / 1024).toFixed(1),
    perAccount: true,
  },
  { key: 'storageObjectsPerAccount', label: 'storage objects per account', fmt: (v) => v.toFixed(0), perAccount: true },
  { key: 'workerPeakRssMb', label: 'worker peak RSS (MB)', fmt: (v) => v.toFixed(0), perAccount: false },
  {
    key: 'catchUpSyncsPerSecond',
    label: 'catch-up after an hour down (syncs/s)',
    fmt: (v) => v.toFixed(1),
    perAccount: false,
  },
  {
    key: 'downtimeAccountsPerSecond',
    label: 'catch-up after 3 days down (accounts/s)',
    fmt: (v) => v.toFixed(1),
    perAccount: false,
  },
  {
    key: 'downtimeCpuMsPerAccount',
    label: 'worker CPU per account in it (ms)',
    fmt: (v) => v.toFixed(0),
    perAccount: false,
  },
  {
    key: 'downtimeMinutesToSyncAll',
    label: 'every account synced after (minutes)',
    fmt: (v) => v.toFixed(0),
    perAccount: false,
  },
];

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { out: { type: 'string' }, extrapolate: { type: 'string' }, downtime: { type: 'string', multiple: true } },
  });
  if (positionals.length === 0) {
    process.stderr.write(
      'usage: node --import tsx bench/soak-report.ts [--out file.svg] [--extrapolate N] run.json...\n',
    );
    process.exit(2);
  }
  const runs: Run[] = [];
  for (const f of positionals) runs.push(JSON.parse(await readFile(f, 'utf8')) as Run);
  runs.sort((a, b) => a.accounts - b.accounts);
  for (const f of values.downtime ?? []) {
    const d = JSON.parse(await readFile(f, 'utf8')) as DowntimeRun;
    const run = runs.find((r) => r.accounts === d.accounts);
    if (!run) throw new Error(`${f}: no --scale run of ${d.accounts} accounts to add it to`);
    run.downtimeAccountsPerSecond = d.catchUp.accountsSyncedPerSecond;
    run.downtimeCpuMsPerAccount = d.catchUp.workerCpuMsPerAccount;
    run.downtimeMinutesToSyncAll = (d.catchUp.secondsToSyncAll ?? d.catchUp.untilAllSyncedSeconds) / 60;
    run.downtimeFinished = d.finished !== false;
  }
  const n = Number(values.extrapolate);
  if (n > 0 && !runs.some((r) => r.accounts === n)) {
    const last = runs.at(-1)!;
    runs.push({
      ...last,
      accounts: n,
      cpuPercentOfOneCore: (last.cpuPercentOfOneCore * n) / last.accounts,
      extrapolated: true,
    });
  }
  const head = runs.map((r) => `${r.accounts.toLocaleString('en')}${r.extrapolated ? ' (extrapolated)' : ''}`);
  const lines = [`| figure | ${head.join(' | ')} |`, `|---|${runs.map(() => '---').join('|')}|`];
  const cell = (r: Run, f: (typeof FIGURES)[number]) => {
    if (r[f.key] === undefined) return '-';
    // A stopped catch-up's figures are over its window, and its time to sync all is projected.
    const partial = f.key.startsWith('downtime') && r.downtimeFinished === false;
    return `${f.fmt(Number(r[f.key]))}${partial ? (f.key === 'downtimeMinutesToSyncAll' ? ' (projected)' : ' (first window)') : ''}`;
  };
  for (const f of FIGURES) {
    if (runs.every((r) => r[f.key] === undefined)) continue;
    lines.push(`| ${f.label} | ${runs.map((r) => cell(r, f)).join(' | ')} |`);
  }
  process.stdout.write(lines.join('\n') + '\n');
  const base = runs[0]!;
  const measured = runs.filter((r) => !r.extrapolated);
  const rel = (k: keyof Run, rs: Run[]) =>
    rs.map((r) => [r.accounts, Number(r[k]) / Math.max(1e-9, Number(base[k]))] as const);
  const out = values.out ?? 'bench/results/soak-growth.svg';
  await writeChart(out, {
    title: `Soak: figures per account, and catch-up rates, against accounts, relative to ${base.accounts.toLocaleString('en')} accounts`,
    xLabel: 'accounts on one worker',
    yLabel: `per-account figure / its value at ${base.accounts.toLocaleString('en')}`,
    series: [
      {
        name: 'CPU per account',
        points: measured.map(
          (r) => [r.accounts, r.cpuPercentOfOneCore / r.accounts / (base.cpuPercentOfOneCore / base.accounts)] as const,
        ),
      },
      { name: 'Redis per account', points: rel('redisBytesPerAccount', measured) },
      { name: 'PostgreSQL per account', points: rel('postgresBytesPerAccount', measured) },
      { name: 'peak RSS', points: rel('workerPeakRssMb', measured) },
      { name: 'p99 lateness', points: rel('p99LatenessSeconds', measured) },
      { name: 'catch-up rate, an hour down', points: rel('catchUpSyncsPerSecond', measured) },
      ...(measured.filter((r) => r.downtimeAccountsPerSecond !== undefined).length > 1
        ? [
            {
              // A rate, not a per-account figure: 1 = the same accounts a second at every size.
              name: 'catch-up rate, 3 days down',
              points: measured
                .filter((r) => r.downtimeAccountsPerSecond !== undefined)
                .map(
                  (r, _, all) =>
                    [r.accounts, r.downtimeAccountsPerSecond! / all[0]!.downtimeAccountsPerSecond!] as const,
                ),
            },
          ]
        : []),
    ],
    marks: [{ y: 2, label: '2x' }],
  });
  process.stderr.write(`chart: ${out}\n`);
}

await main();
