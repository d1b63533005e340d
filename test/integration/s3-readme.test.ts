import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketCorsCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.ts';
import { validateFeed } from '../../src/schema/validate.ts';
import { registerSecretForAudit } from '../support/capture.ts';
import { closedPort } from '../support/closed-port.ts';
import { runFeedmirror, spawnFeedmirror, type Spawned } from '../support/processes.ts';
import { startS3, S3RVER_CREDENTIALS, type TestS3 } from '../support/s3.ts';
import { redisForTest } from '../support/services.ts';
import { until } from '../support/wait.ts';
import { dropQueues } from '../support/queues.ts';
import { simulatorEnv } from '../support/worker-env.ts';

/**
 * docs/getting-started.md, "Running with S3", followed step by step in its order, with s3rver standing in for S3
 * and the simulator for the platform: credentials, the bucket (public prefixes, CORS), the
 * database, `init`, `doctor`, worker and server, an account and `sync --wait`, reading the feed
 * the way the README says (the SDK's GetObject standing in for `aws s3 cp`, and over HTTP).
 * Every feedmirror command runs as a real process in a shell-loaded environment.
 */
describe('docs/getting-started.md: Running with S3, as followed', () => {
  let s3: TestS3;
  let sim: Simulator;
  let dir: string;
  const bucket = 'my-feeds';
  const dbName = `fm_s3readme_${Date.now().toString(36)}`;
  const adminUrl = inject('databaseUrl');
  const redis = redisForTest('s3readme');
  const procs: Spawned[] = [];

  beforeAll(async () => {
    s3 = await startS3(bucket, { createBucket: false });
    sim = await startSimulator({ start: Date.now() });
    dir = mkdtempSync(join(tmpdir(), 'fm-s3readme-'));
  });

  afterAll(async () => {
    for (const p of procs) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await dropQueues({ url: redis.url, prefix: redis.prefix });
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await c.end();
    await sim?.close();
    await s3?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('steps 1 to 8', async () => {
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    });
    // 2. The bucket, with CORS for GETs from any origin (s3rver has no bucket policies: it serves
    //    objects to anonymous GETs, as the policy of step 2 makes AWS do under the three prefixes).
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    await client.send(
      new PutBucketCorsCommand({
        Bucket: bucket,
        CORSConfiguration: {
          CORSRules: [
            {
              AllowedOrigins: ['*'],
              AllowedMethods: ['GET', 'HEAD'],
              AllowedHeaders: ['*'],
              ExposeHeaders: ['ETag', 'Last-Modified'],
              MaxAgeSeconds: 3600,
            },
          ],
        },
      }),
    );

    // 3. The database (createdb).
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    await admin.end();

    // 4. init, then fill in what it says is left, as an operator edits the file.
    const init = await runFeedmirror(
      ['init', '--storage', `s3://${bucket}/feedmirror`, '--s3-endpoint', s3.endpoint],
      {},
      { cwd: dir },
    );
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toMatch(/S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/);
    const port = await closedPort();
    const database = new URL(adminUrl);
    database.pathname = `/${dbName}`;
    const fill: Record<string, string> = {
      // 1. Credentials (the SDK reads them).
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      MEDIA_PUBLIC_URL: `${s3.endpoint}/${bucket}/feedmirror/`,
      DATABASE_URL: database.toString(),
      REDIS_URL: redis.url,
      REDIS_PREFIX: redis.prefix,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      PORT: String(port),
      ...simulatorEnv(sim),
      MEDIA_VARIANT_WIDTHS: '160',
    };
    let text = readFileSync(join(dir, '.env'), 'utf8');
    for (const [k, v] of Object.entries(fill)) {
      const re = new RegExp(`^#? ?${k}=.*$`, 'm');
      text = re.test(text) ? text.replace(re, `${k}=${v}`) : `${text}\n${k}=${v}\n`;
    }
    writeFileSync(join(dir, '.env'), text);
    const sh = spawnSync('bash', ['--norc', '--noprofile', '-c', 'set -a; . ./.env; set +a; env -0'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(sh.stderr).toBe('');
    const env = Object.fromEntries(
      sh.stdout
        .split('\0')
        .filter((e) => e.includes('='))
        .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
    );
    registerSecretForAudit(env.TOKEN_ENCRYPTION_KEY!);
    registerSecretForAudit(env.DASHBOARD_PASSWORD!);
    const run = (args: string[], stdin?: string) => runFeedmirror(args, env, { cwd: dir, ...(stdin ? { stdin } : {}) });

    // 5. doctor: ready (warnings allowed: no SMTP, this Redis's own settings).
    const doctor = await run(['doctor']);
    expect(doctor.code, doctor.stdout).toBe(0);
    for (const check of [
      'storage reachable',
      'storage write, read, delete',
      'MEDIA_PUBLIC_URL serves the copies',
      'feeds readable cross-origin',
      'database exists',
      'Redis reachable',
    ]) {
      expect(doctor.stdout).toMatch(new RegExp(`^ok {4}${check}: `, 'm'));
    }

    // 6. worker and serve; the worker publishes the widget script when it starts.
    procs.push(spawnFeedmirror(['worker'], env, { cwd: dir }), spawnFeedmirror(['serve'], env, { cwd: dir }));
    await until(() => procs[1]!.output().includes('feedmirror serving on'), 'serve listening', 30_000);
    await until(
      async () =>
        await client
          .send(new HeadObjectCommand({ Bucket: bucket, Key: 'feedmirror/widget/feedmirror-widget.js' }))
          .then(
            () => true,
            () => false,
          ),
      'the widget script in the bucket',
      30_000,
    );

    // 7. An account, then one sync here and now.
    const acc = sim.createAccount({ username: 'bucket.bakery', posts: 4 });
    const token = sim.issueShortLivedToken(acc.id);
    registerSecretForAudit(token);
    const added = await run(['accounts', 'add', '--json'], token);
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ id: acc.id, username: 'bucket.bakery' });
    const synced = await run(['sync', acc.id, '--wait']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stdout).toMatch(/^summary: complete listing, .*feed (written|unchanged)/m);

    // 8. Read the feed: `aws s3 cp s3://my-feeds/feedmirror/feeds/<id>.json -` ...
    const obj = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `feedmirror/feeds/${acc.id}.json` }));
    const feed = validateFeed(JSON.parse(await obj.Body!.transformToString()));
    expect(feed.ok).toBe(true);
    if (!feed.ok) return;
    expect(feed.feed.posts).toHaveLength(4);
    // ... the thumbnails point at the public prefix ...
    for (const p of feed.feed.posts)
      if (p.thumbnailUrl) expect(p.thumbnailUrl.startsWith(`${s3.endpoint}/${bucket}/feedmirror/media/`)).toBe(true);
    // ... what browsers fetch, cross-origin ...
    const res = await fetch(`${env.MEDIA_PUBLIC_URL}feeds/${acc.id}.json`, {
      headers: { origin: 'https://some-site.example' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toMatch(/^(\*|https:\/\/some-site\.example)$/);
    const img = await fetch(feed.feed.posts.find((p) => p.thumbnailUrl)!.thumbnailUrl!);
    expect(img.status).toBe(200);
    // ... and feeds get.
    const got = await run(['feeds', 'get', acc.id, '--json']);
    expect(JSON.parse(got.stdout).posts).toHaveLength(4);

    // Node 20: the AWS SDK's warning is one line per process at most; Node 22: none.
    const major = Number(process.versions.node.split('.')[0]);
    for (const r of [doctor, added, synced, got]) {
      const lines = r.stderr.split('\n').filter((l) => /Node|Warning/.test(l));
      expect(lines.length, r.stderr).toBeLessThanOrEqual(major < 22 ? 1 : 0);
    }
  }, 180_000);
});
