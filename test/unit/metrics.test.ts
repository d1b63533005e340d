import { register as globalRegister } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics, JOB_STATES, metricsText, type JobCountsSource } from '../../src/metrics/index.ts';
import { ExpositionError, parseExposition, type MetricFamily } from '../../src/metrics/exposition.ts';
import { DAY, HOUR, ManualClock } from '../../src/util/clock.ts';

/** A queue as BullMQ presents it to the collector: its name and getJobCounts(). */
function queue(name: string, counts: Record<string, number> | Error | 'hang'): JobCountsSource {
  return {
    name,
    getJobCounts: () =>
      counts === 'hang'
        ? new Promise(() => {})
        : counts instanceof Error
          ? Promise.reject(counts)
          : Promise.resolve(counts),
  };
}

function sample(f: MetricFamily | undefined, labels: Record<string, string>, name = f?.name): number | undefined {
  return f?.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

describe('metrics', () => {
  it('exposes every feedmirror family, parsed by a strict Prometheus text parser, with labels and values', async () => {
    const clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
    const t0 = clock.now().getTime();
    const expiries = [
      { accountId: 'acc-1', expiresAt: new Date(t0 + 10 * DAY + 12 * HOUR) },
      { accountId: 'acc-2', expiresAt: new Date(t0 - 2 * DAY) },
      { accountId: 'acc-3', expiresAt: null },
    ];
    const m = createMetrics({
      clock,
      queues: [queue('feed-sync', { waiting: 3, active: 1, failed: 2 }), queue('token-refresh', { delayed: 5 })],
      tokenExpiries: async () => expiries,
    });
    m.jobFailures.inc({ queue: 'feed-sync' });
    m.syncDuration.observe({ outcome: 'ok' }, 3.5);
    m.syncDuration.observe({ outcome: 'failed' }, 0.2);
    m.imagesCopied.inc(4);
    m.imageBytesCopied.inc(123_456);
    m.platformCalls.inc({ operation: 'media_list', outcome: 'ok' }, 7);
    m.platformCalls.inc({ operation: 'refresh', outcome: 'token_invalid' });
    m.rateLimitWaits.inc({ operation: 'media_list' });

    const families = parseExposition(await metricsText(m));
    const f = (n: string) => families.get(n);
    expect(f('feedmirror_jobs')?.type).toBe('gauge');
    expect(sample(f('feedmirror_jobs'), { queue: 'feed-sync', state: 'waiting' })).toBe(3);
    expect(sample(f('feedmirror_jobs'), { queue: 'feed-sync', state: 'failed' })).toBe(2);
    expect(sample(f('feedmirror_jobs'), { queue: 'token-refresh', state: 'delayed' })).toBe(5);
    // Every state is reported, zero when BullMQ did not mention it.
    expect(
      f('feedmirror_jobs')
        ?.samples.filter((s) => s.labels.queue === 'feed-sync')
        .map((s) => s.labels.state),
    ).toEqual([...JOB_STATES]);
    expect(sample(f('feedmirror_jobs'), { queue: 'token-refresh', state: 'active' })).toBe(0);

    // R-TOK-9: days left from the stored expiry, on the injected clock; an account without a token has no series.
    expect(sample(f('feedmirror_token_days_left'), { account_id: 'acc-1' })).toBe(10.5);
    expect(sample(f('feedmirror_token_days_left'), { account_id: 'acc-2' })).toBe(-2);
    expect(f('feedmirror_token_days_left')?.samples).toHaveLength(2);
    clock.advance(DAY);
    const later = parseExposition(await m.metricsText());
    expect(sample(later.get('feedmirror_token_days_left'), { account_id: 'acc-1' })).toBe(9.5);

    expect(f('feedmirror_job_failures_total')?.type).toBe('counter');
    expect(sample(f('feedmirror_job_failures_total'), { queue: 'feed-sync' })).toBe(1);
    expect(f('feedmirror_sync_duration_seconds')?.type).toBe('histogram');
    expect(
      sample(f('feedmirror_sync_duration_seconds'), { outcome: 'ok' }, 'feedmirror_sync_duration_seconds_count'),
    ).toBe(1);
    expect(
      sample(
        f('feedmirror_sync_duration_seconds'),
        { outcome: 'ok', le: '5' },
        'feedmirror_sync_duration_seconds_bucket',
      ),
    ).toBe(1);
    expect(
      sample(
        f('feedmirror_sync_duration_seconds'),
        { outcome: 'ok', le: '2' },
        'feedmirror_sync_duration_seconds_bucket',
      ),
    ).toBe(0);
    expect(sample(f('feedmirror_images_copied_total'), {})).toBe(4);
    expect(sample(f('feedmirror_images_copied_bytes_total'), {})).toBe(123_456);
    expect(sample(f('feedmirror_platform_calls_total'), { operation: 'media_list', outcome: 'ok' })).toBe(7);
    expect(sample(f('feedmirror_platform_calls_total'), { operation: 'refresh', outcome: 'token_invalid' })).toBe(1);
    expect(sample(f('feedmirror_rate_limit_waits_total'), { operation: 'media_list' })).toBe(1);

    // Process metrics under the same prefix; every family carries it.
    expect(families.has('feedmirror_process_cpu_seconds_total')).toBe(true);
    expect(families.has('feedmirror_nodejs_heap_size_used_bytes')).toBe(true);
    for (const name of families.keys()) expect(name.startsWith('feedmirror_')).toBe(true);
    expect(m.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('uses its own registry: nothing lands in prom-client global registry, two instances coexist', async () => {
    const before = (await globalRegister.getMetricsAsJSON()).length;
    const a = createMetrics({ processMetrics: false });
    const b = createMetrics({ processMetrics: false });
    a.imagesCopied.inc();
    expect((await globalRegister.getMetricsAsJSON()).length).toBe(before);
    expect(sample(parseExposition(await b.metricsText()).get('feedmirror_images_copied_total'), {})).toBe(0);
    expect(sample(parseExposition(await a.metricsText()).get('feedmirror_images_copied_total'), {})).toBe(1);
  });

  it('a queue or store that fails or hangs never breaks /metrics: it is counted and the rest still reports', async () => {
    const m = createMetrics({
      processMetrics: false,
      collectTimeoutMs: 20,
      queues: [
        queue('feed-sync', new Error('Connection is closed.')),
        queue('mirror-media', 'hang'),
        queue('publish-feed', { waiting: 1 }),
      ],
      tokenExpiries: () => Promise.reject(new Error('connect ECONNREFUSED')),
    });
    const families = parseExposition(await m.metricsText());
    expect(families.get('feedmirror_jobs')?.samples.every((s) => s.labels.queue === 'publish-feed')).toBe(true);
    expect(sample(families.get('feedmirror_jobs'), { queue: 'publish-feed', state: 'waiting' })).toBe(1);
    expect(sample(families.get('feedmirror_metrics_collect_failures_total'), { source: 'queues' })).toBe(2);
    expect(sample(families.get('feedmirror_metrics_collect_failures_total'), { source: 'accounts' })).toBe(1);
    expect(families.get('feedmirror_token_days_left')?.samples).toEqual([]);
  });
});

describe('account health metrics (R-HLT-1)', () => {
  it('one gauge per account and verdict (1 for its verdict, 0 for the others), the counts by verdict, one read per scrape', async () => {
    let verdicts: Array<{ accountId: string; verdict: 'ok' | 'warn' | 'fail' }> = [
      { accountId: 'a1', verdict: 'ok' },
      { accountId: 'a2', verdict: 'fail' },
      { accountId: 'a3', verdict: 'fail' },
    ];
    let reads = 0;
    const m = createMetrics({
      processMetrics: false,
      accountHealth: async () => {
        reads++;
        return verdicts;
      },
    });
    let f = parseExposition(await m.metricsText());
    expect(reads).toBe(1);
    const health = f.get('feedmirror_account_health');
    expect(health?.type).toBe('gauge');
    expect(sample(health, { account_id: 'a1', verdict: 'ok' })).toBe(1);
    expect(sample(health, { account_id: 'a1', verdict: 'fail' })).toBe(0);
    expect(sample(health, { account_id: 'a2', verdict: 'fail' })).toBe(1);
    expect(health?.samples).toHaveLength(9);
    expect(sample(f.get('feedmirror_accounts'), { verdict: 'fail' })).toBe(2);
    expect(sample(f.get('feedmirror_accounts'), { verdict: 'warn' })).toBe(0);
    // The next scrape reads again: a removed account disappears, a healed one turns ok.
    verdicts = [{ accountId: 'a2', verdict: 'ok' }];
    f = parseExposition(await m.metricsText());
    expect(reads).toBe(2);
    expect(f.get('feedmirror_account_health')?.samples).toHaveLength(3);
    expect(sample(f.get('feedmirror_account_health'), { account_id: 'a2', verdict: 'ok' })).toBe(1);
    expect(sample(f.get('feedmirror_accounts'), { verdict: 'fail' })).toBe(0);
  });

  it('a store that fails reports no verdict (never a stale "ok") and counts the failure', async () => {
    const m = createMetrics({ processMetrics: false, accountHealth: () => Promise.reject(new Error('ECONNREFUSED')) });
    const f = parseExposition(await m.metricsText());
    expect(f.get('feedmirror_account_health')?.samples).toEqual([]);
    expect(f.get('feedmirror_accounts')?.samples).toEqual([]);
    expect(sample(f.get('feedmirror_metrics_collect_failures_total'), { source: 'accounts' })).toBe(1);
  });
});

describe('strict exposition parser', () => {
  const ok = '# HELP a_total help\n# TYPE a_total counter\na_total{x="1"} 2\n';
  it('accepts valid text, label escapes, and prom-client NaN spelling', () => {
    const fams = parseExposition(`${ok}# TYPE g gauge\ng{v="q\\"\\\\\\n"} Nan\ng{v="b"} -1.5e3\n`);
    expect(fams.get('g')?.samples[0]?.labels.v).toBe('q"\\\n');
    expect(fams.get('g')?.samples[1]?.value).toBe(-1500);
  });
  it.each([
    ['sample without TYPE', 'b 1\n'],
    ['bad value', '# TYPE g gauge\ng abc\n'],
    ['duplicate series', '# TYPE g gauge\ng{a="1"} 1\ng{a="1"} 2\n'],
    ['family not contiguous', '# TYPE g gauge\ng 1\n# TYPE h gauge\nh 1\ng{a="2"} 1\n'],
    ['negative counter', '# TYPE c_total counter\nc_total -1\n'],
    ['bad escape', '# TYPE g gauge\ng{a="\\x"} 1\n'],
    ['unterminated label', '# TYPE g gauge\ng{a="1} 1\n'],
    ['no trailing newline', '# TYPE g gauge\ng 1'],
    ['histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n'],
    ['histogram count mismatch', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n'],
    ['histogram not cumulative', '# TYPE h histogram\nh_bucket{le="1"} 3\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 2\n'],
  ])('rejects %s', (_what, text) => {
    expect(() => parseExposition(text)).toThrow(ExpositionError);
  });
});
