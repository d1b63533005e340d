import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { validate as validateDockerfile } from 'dockerfile-utils';
import { configSchema } from '../../src/config.ts';
import { floatingTag } from '../support/image-pins.ts';

/**
 * No container engine runs here, so the compose file and the Kubernetes manifests are checked as
 * data: they parse, hold the required keys, wire env from the right places, reference secrets
 * instead of inlining them, and name only variables feedmirror's config knows.
 */
const INFRA = path.resolve('infra');
const CONFIG_KEYS = new Set(Object.keys(configSchema.shape));
// Read by the AWS SDK's default credential chain or by Node itself, not by src/config.ts.
const OUTSIDE_CONFIG = new Set(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'NODE_ENV']);
const SECRET_KEYS = ['APP_SECRET', 'TOKEN_ENCRYPTION_KEY', 'DASHBOARD_PASSWORD', 'SMTP_URL', 'DATABASE_URL'];

// Parsed YAML of arbitrary shape: `any` keeps the many nested key checks readable.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
type Obj = Record<string, any>;

async function k8s(): Promise<Obj[]> {
  const dir = path.join(INFRA, 'k8s');
  const files = [
    ...(await readdir(dir)).filter((f) => f.endsWith('.yaml')).map((f) => path.join(dir, f)),
    path.join(dir, 'templates', 'secret.yaml'),
  ];
  const docs: Obj[] = [];
  for (const f of files) {
    for (const d of parseAllDocuments(await readFile(f, 'utf8'))) {
      expect(d.errors, f).toEqual([]);
      const js = d.toJS() as Obj | null;
      if (js) docs.push({ ...js, __file: path.relative(INFRA, f) });
    }
  }
  return docs;
}

const byKindName = (docs: Obj[], kind: string, name: string) => {
  const d = docs.find((x) => x.kind === kind && x.metadata?.name === name);
  expect(d, `${kind}/${name}`).toBeDefined();
  return d!;
};

function podSpec(d: Obj): Obj {
  return d.kind === 'Job' || d.kind === 'Deployment' ? d.spec.template.spec : {};
}

describe('compose file', () => {
  it('runs Redis, PostgreSQL, MinIO with a bucket init, an SMTP catcher, migrate, 2 workers and the server, with healthchecks', async () => {
    const text = await readFile(path.join(INFRA, 'compose.yaml'), 'utf8');
    const doc = parse(text, { merge: true }) as Obj;
    const s = doc.services as Obj;
    expect(Object.keys(s).sort()).toEqual([
      'mailpit',
      'migrate',
      'minio',
      'minio-init',
      'postgres',
      'redis',
      'server',
      'worker',
    ]);
    for (const name of Object.keys(s)) expect(typeof s[name].image, `${name} image`).toBe('string');
    for (const name of ['redis', 'postgres', 'minio', 'mailpit', 'server'])
      expect(s[name].healthcheck?.test, `${name} healthcheck`).toBeDefined();
    expect(s['minio-init'].command.join(' ')).toMatch(/mc mb --ignore-existing local\/feedmirror/);
    expect(s.worker.command).toEqual(['worker']);
    expect(s.worker.deploy.replicas).toBe(2);
    expect(s.server.command).toEqual(['serve']);
    expect(s.migrate.command).toEqual(['migrate']);
    expect(s.server.healthcheck.test.join(' ')).toContain('/readyz');
    // The feedmirror services are built from infra/Dockerfile and read .env.
    for (const name of ['worker', 'server', 'migrate']) {
      expect(s[name].build).toEqual({ context: '..', dockerfile: 'infra/Dockerfile' });
      expect(s[name].env_file).toEqual([{ path: '../.env', required: true }]);
    }
    expect(s.worker.depends_on.migrate.condition).toBe('service_completed_successfully');
    expect(s.worker.depends_on['minio-init'].condition).toBe('service_completed_successfully');
    expect(s.server.environment.HOST).toBe('0.0.0.0');
    // Service addresses point inside the compose network.
    expect(s.worker.environment.REDIS_URL).toBe('redis://redis:6379');
    expect(s.worker.environment.DATABASE_URL).toMatch(/@postgres:5432\//);
    expect(s.worker.environment.S3_ENDPOINT).toBe('http://minio:9000');
    expect(s.worker.environment.SMTP_URL).toBe('smtp://mailpit:1025');
    // Each worker serves its own /metrics inside the network; not published (2 replicas would clash).
    expect(s.worker.environment.METRICS_HOST).toBe('0.0.0.0');
    expect(s.worker.environment.METRICS_PORT).toBe('9464');
    expect(s.worker.expose).toEqual(['9464']);
    expect(s.worker.ports).toBeUndefined();
    expect(s.worker.labels['prometheus.io/port']).toBe('9464');
    expect(s.worker.healthcheck.test.join(' ')).toContain('127.0.0.1:9464/healthz');
    // The worker's own environment still carries the shared service addresses.
    expect(s.worker.environment.REDIS_URL).toBe('redis://redis:6379');
    // Published ports listen on loopback only.
    for (const svc of Object.values(s))
      for (const p of (svc.ports ?? []) as string[]) expect(p).toMatch(/^127\.0\.0\.1:/);
  });

  it('names only variables that src/config.ts knows (or the AWS SDK reads), and the app secrets come from .env', async () => {
    const doc = parse(await readFile(path.join(INFRA, 'compose.yaml'), 'utf8'), { merge: true }) as Obj;
    for (const name of ['worker', 'server', 'migrate']) {
      for (const key of Object.keys(doc.services[name].environment)) {
        expect(CONFIG_KEYS.has(key) || OUTSIDE_CONFIG.has(key), `${name}: ${key} is not a feedmirror setting`).toBe(
          true,
        );
      }
      // Never inlined: these come from .env.
      for (const key of ['APP_SECRET', 'TOKEN_ENCRYPTION_KEY', 'DASHBOARD_PASSWORD'])
        expect(doc.services[name].environment[key]).toBeUndefined();
    }
  });

  it('.env.example lists only known settings, so env_file wiring passes config validation', async () => {
    const text = await readFile(path.resolve('.env.example'), 'utf8');
    const keys = text
      .split('\n')
      .map((l) => /^([A-Z0-9_]+)=/.exec(l)?.[1])
      .filter((k): k is string => !!k);
    expect(keys.length).toBeGreaterThan(10);
    for (const k of keys) expect(CONFIG_KEYS.has(k), k).toBe(true);
  });
});

describe('Dockerfile', () => {
  const dockerfile = () => readFile(path.join(INFRA, 'Dockerfile'), 'utf8');

  it('passes dockerfile-utils (the Dockerfile linter) with no diagnostic', async () => {
    expect(validateDockerfile(await dockerfile())).toEqual([]);
    // The linter does find faults: an instruction it does not know, a port that is no port.
    expect(validateDockerfile('FROM node:22.22.2-bookworm-slim\nEXPOSE http\nCOPYY a b\n').length).toBeGreaterThan(0);
  });

  it('builds from one pinned Node base (no floating tag), compiles in its own stage, and ships JavaScript only', async () => {
    const text = await dockerfile();
    const froms = [...text.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!);
    expect(froms).toHaveLength(3);
    expect(new Set(froms).size).toBe(1);
    expect(floatingTag(froms[0]!)).toBeUndefined();
    expect(froms[0]).toMatch(/^node:22\.\d+\.\d+-bookworm-slim(@sha256:[0-9a-f]{64})?$/);
    // The build stage has the compiler; the image gets its dist/ and production dependencies only.
    expect(text).toMatch(/^RUN npm run build$/m);
    expect(text).toMatch(/npm ci --omit=dev/);
    expect(text).toMatch(/rm -rf node_modules\/typescript /);
    expect(text).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
    const finalStage = text.slice(text.lastIndexOf('\nFROM '));
    expect(finalStage).not.toMatch(/^COPY (src|jobs|migrations) /m);
    expect(finalStage).toMatch(/^USER node$/m);
    // sharp + glibc: fewer malloc arenas keep the worker's memory flat (docs/benchmarks.md).
    expect(finalStage).toMatch(/^ENV MALLOC_ARENA_MAX=2$/m);
    // tini is PID 1 and hands signals to node; Debian's package, pinned.
    expect(finalStage).toMatch(/apt-get install -y --no-install-recommends tini=\S+/);
    expect(finalStage).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--", "node", "bin\/feedmirror\.js"\]$/m);
  });

  it('.dockerignore lets in only what the Dockerfile copies: never .env, node_modules, data or .git', async () => {
    const ignore = (await readFile(path.resolve('.dockerignore'), 'utf8'))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(ignore[0]).toBe('*');
    const allowed = ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    for (const never of ['.env', 'node_modules', 'data', '.git', 'test', 'test-artifacts', 'dist'])
      expect(allowed, never).not.toContain(never);
    expect(ignore).toEqual(expect.arrayContaining(['**/.env', '**/node_modules']));
    const text = await dockerfile();
    const sources = [...text.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    for (const src of sources) expect(allowed, `COPY ${src}`).toContain(src.replace(/\/$/, ''));
  });

  it('the production dependency set holds no TypeScript runner: tsx and esbuild are dev only, typescript only an optional peer the image removes', async () => {
    const lock = JSON.parse(await readFile(path.resolve('package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
    };
    const production = Object.entries(lock.packages).filter(([k, v]) => k !== '' && !v.dev);
    const names = production.map(([k]) => k.replace(/^.*node_modules\//, ''));
    expect(names.length).toBeGreaterThan(100);
    for (const name of names) expect(name, name).not.toMatch(/^(tsx|esbuild|@esbuild\/.*|ts-node)$/);
    expect(lock.packages['node_modules/typescript']).toMatchObject({ devOptional: true });
    const pkg = JSON.parse(await readFile(path.resolve('package.json'), 'utf8')) as Record<
      string,
      Record<string, string>
    >;
    expect(Object.keys(pkg.dependencies!)).not.toContain('tsx');
    expect(Object.keys(pkg.dependencies!)).not.toContain('typescript');
  });
});

describe('Kubernetes manifests', () => {
  it('parse, are namespace-free and carry the expected objects', async () => {
    const docs = await k8s();
    for (const d of docs) {
      expect(d.apiVersion, d.__file).toBeTruthy();
      expect(d.metadata?.namespace, `${d.__file} must be namespace-free`).toBeUndefined();
    }
    const kinds = docs.map((d) => `${d.kind}/${d.metadata?.name ?? ''}`).sort();
    expect(kinds).toEqual(
      [
        'ConfigMap/feedmirror-config',
        'Deployment/feedmirror-server',
        'Deployment/feedmirror-worker',
        'Job/feedmirror-migrate',
        'Kustomization/',
        'PodDisruptionBudget/feedmirror-worker',
        'Secret/feedmirror-secrets',
        'Service/feedmirror-server',
      ].sort(),
    );
    // kustomization applies everything but the Secret template (placeholders never overwrite real values).
    const kust = docs.find((d) => d.kind === 'Kustomization')!;
    const listed = (kust.resources as string[]).sort();
    const files = docs
      .filter((d) => d.kind !== 'Kustomization' && d.kind !== 'Secret')
      .map((d) => path.basename(d.__file))
      .sort();
    expect(listed).toEqual(files);
  });

  it('worker: 3 replicas, long grace period for running jobs, no HTTP probes, config and secrets by reference', async () => {
    const docs = await k8s();
    const w = byKindName(docs, 'Deployment', 'feedmirror-worker');
    expect(w.spec.replicas).toBe(3);
    const spec = podSpec(w);
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(120);
    const c = spec.containers[0];
    expect(c.image).toBe('feedmirror');
    expect(c.args).toEqual(['worker']);
    // It serves no HTTP: an httpGet probe could never pass.
    expect(c.readinessProbe?.httpGet).toBeUndefined();
    expect(c.livenessProbe?.httpGet).toBeUndefined();
    expect(w.spec.selector.matchLabels).toEqual(w.spec.template.metadata.labels);
  });

  it('worker: serves /metrics on a named port that its env and Prometheus annotations agree on', async () => {
    const docs = await k8s();
    const w = byKindName(docs, 'Deployment', 'feedmirror-worker');
    const c = podSpec(w).containers[0];
    const env = Object.fromEntries((c.env as Obj[]).map((e) => [e.name, e.value]));
    expect(env.METRICS_HOST).toBe('0.0.0.0');
    const port = c.ports.find((p: Obj) => p.name === 'metrics');
    expect(env.METRICS_PORT).toBe(String(port.containerPort));
    const ann = w.spec.template.metadata.annotations;
    expect(ann['prometheus.io/scrape']).toBe('true');
    expect(ann['prometheus.io/port']).toBe(String(port.containerPort));
    expect(ann['prometheus.io/path']).toBe('/metrics');
    // Worker-only: the server shares the ConfigMap and must not get these.
    const cm = byKindName(docs, 'ConfigMap', 'feedmirror-config');
    expect(cm.data.METRICS_PORT).toBeUndefined();
  });

  it('server: Deployment with /readyz readiness and /healthz liveness, Service selecting it', async () => {
    const docs = await k8s();
    const s = byKindName(docs, 'Deployment', 'feedmirror-server');
    const c = podSpec(s).containers[0];
    expect(c.args).toEqual(['serve']);
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect(c.livenessProbe.httpGet.path).toBe('/healthz');
    const port = c.ports.find((p: Obj) => p.name === 'http');
    expect(port.containerPort).toBe(8080);
    const svc = byKindName(docs, 'Service', 'feedmirror-server');
    expect(svc.spec.selector).toEqual(s.spec.template.metadata.labels);
    expect(svc.spec.ports[0].targetPort).toBe('http');
    const cm = byKindName(docs, 'ConfigMap', 'feedmirror-config');
    expect(cm.data.PORT).toBe(String(port.containerPort));
    expect(cm.data.HOST).toBe('0.0.0.0');
  });

  it('migration Job runs `migrate` once with the same configuration', async () => {
    const docs = await k8s();
    const j = byKindName(docs, 'Job', 'feedmirror-migrate');
    const spec = podSpec(j);
    expect(spec.restartPolicy).toBe('Never');
    expect(spec.containers[0].args).toEqual(['migrate']);
    expect(j.spec.backoffLimit).toBeGreaterThan(0);
  });

  it('secrets are referenced, never inlined; the template holds placeholders only (R-TOK-11)', async () => {
    const docs = await k8s();
    const secret = byKindName(docs, 'Secret', 'feedmirror-secrets');
    for (const key of SECRET_KEYS) {
      expect(secret.stringData[key], key).toMatch(/^REPLACE_ME/);
    }
    for (const v of Object.values(secret.stringData as Record<string, string>)) expect(v).toMatch(/^REPLACE_ME/);
    const cm = byKindName(docs, 'ConfigMap', 'feedmirror-config');
    for (const key of [...SECRET_KEYS, 'REDIS_URL', 'AWS_SECRET_ACCESS_KEY'])
      expect(cm.data[key], `${key} must not be in the ConfigMap`).toBeUndefined();
    // Redis Cluster: the prefix is in braces, so a queue's keys share one hash slot.
    expect(cm.data.REDIS_PREFIX).toMatch(/^\{[^{}]+\}$/);
    for (const d of docs.filter((x) => x.kind === 'Deployment' || x.kind === 'Job')) {
      for (const c of podSpec(d).containers as Obj[]) {
        expect(c.envFrom, `${d.metadata.name}`).toEqual([
          { configMapRef: { name: 'feedmirror-config' } },
          { secretRef: { name: 'feedmirror-secrets' } },
        ]);
        // Any single env entry must come from a reference, not a literal secret value.
        for (const e of (c.env ?? []) as Obj[]) {
          if (SECRET_KEYS.includes(e.name)) expect(e.valueFrom?.secretKeyRef, e.name).toBeDefined();
        }
      }
    }
  });

  it('every variable the manifests set is a setting of src/config.ts (or read by the AWS SDK)', async () => {
    const docs = await k8s();
    const names = new Set<string>();
    for (const d of docs) {
      if (d.kind === 'ConfigMap') Object.keys(d.data).forEach((k) => names.add(k));
      if (d.kind === 'Secret') Object.keys(d.stringData ?? d.data).forEach((k) => names.add(k));
      if (d.kind === 'Deployment' || d.kind === 'Job')
        for (const c of podSpec(d).containers as Obj[]) for (const e of (c.env ?? []) as Obj[]) names.add(e.name);
    }
    expect(names.size).toBeGreaterThan(10);
    for (const n of names)
      expect(CONFIG_KEYS.has(n) || OUTSIDE_CONFIG.has(n), `${n} is not a feedmirror setting`).toBe(true);
    for (const key of SECRET_KEYS) expect(names.has(key), key).toBe(true);
  });
});

describe('systemd units of docs/production.md', () => {
  const units = async () => {
    const doc = await readFile(path.resolve('docs/production.md'), 'utf8');
    return [...doc.matchAll(/```ini\n(# \/etc\/systemd\/[\s\S]*?)```/g)].map((m) => {
      const text = m[1]!;
      const name = /^# \/etc\/systemd\/system\/(\S+)$/m.exec(text)?.[1] ?? '?';
      const values = (key: string) =>
        [...text.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].flatMap((v) => v[1]!.trim().split(/\s+/));
      return { name, values };
    });
  };

  it('each waits for the network it orders itself after: After=network-online.target with Wants= (systemd brings it up only when wanted)', async () => {
    const found = await units();
    expect(found.map((u) => u.name)).toEqual(['feedmirror-worker.service', 'feedmirror-serve.service']);
    for (const u of found) {
      expect(u.values('After'), u.name).toContain('network-online.target');
      expect(u.values('Wants'), u.name).toContain('network-online.target');
    }
  });

  it('each runs a feedmirror command that exists, from the release folder', async () => {
    for (const u of await units()) {
      expect(u.values('ExecStart').slice(0, 2), u.name).toEqual(['/usr/bin/node', 'bin/feedmirror.js']);
      expect(['worker', 'serve'], u.name).toContain(u.values('ExecStart')[2]);
      expect(u.values('EnvironmentFile'), u.name).toEqual(['/etc/feedmirror/env']);
    }
  });
});
