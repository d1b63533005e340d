import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { validate as validateDockerfile } from 'dockerfile-utils';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { configSchema, FILE_SETTINGS } from '../../src/config.ts';
import { floatingTag } from '../support/image-pins.ts';
import { parseKustomizeEnv, renderKustomization, yamlDocs, type Obj } from '../support/kustomize.ts';

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

const K8S = path.join(INFRA, 'k8s');
const byKindName = (docs: Obj[], kind: string, name: string) => {
  const d = docs.find(
    (x) => x.kind === kind && (x.metadata?.name === name || x.metadata?.name?.startsWith(`${name}-`)),
  );
  expect(d, `${kind}/${name}`).toBeDefined();
  return d!;
};
const podSpec = (d: Obj): Obj => (d.kind === 'Job' || d.kind === 'Deployment' ? d.spec.template.spec : {});
const allContainers = (d: Obj): Obj[] => [
  ...((podSpec(d).initContainers ?? []) as Obj[]),
  ...((podSpec(d).containers ?? []) as Obj[]),
];
const envOf = (c: Obj): Record<string, string> =>
  Object.fromEntries(((c.env ?? []) as Obj[]).map((e) => [e.name, e.value]));
/** The base as `kubectl apply -k infra/k8s` applies it, plus the Secret template. */
const k8s = (): Obj[] => [...renderKustomization(K8S).objects, ...yamlDocs(path.join(K8S, 'templates/secret.yaml'))];

/** A compose file as compose reads it (YAML merge keys on). */
const compose = async (file: string): Promise<Obj> =>
  parse(await readFile(path.join(INFRA, file), 'utf8'), { merge: true }) as Obj;

describe('compose files', () => {
  it('runs Redis, PostgreSQL, MinIO with a bucket init, an SMTP catcher, migrate, 2 workers and the server, with healthchecks', async () => {
    const s = (await compose('compose.yaml')).services as Obj;
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
    // "Does this process answer", not "is every dependency up" (docs/production.md, Health).
    expect(s.server.healthcheck.test.join(' ')).toContain('127.0.0.1:8080/serving');
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
    // Published ports listen on loopback only.
    for (const svc of Object.values(s))
      for (const p of (svc.ports ?? []) as string[]) expect(p).toMatch(/^127\.0\.0\.1:/);
  });

  it('every long-running service restarts with the machine; the one-shot ones do not', async () => {
    const s = (await compose('compose.yaml')).services as Obj;
    for (const [name, svc] of Object.entries(s)) {
      if (name === 'migrate' || name === 'minio-init') expect(svc.restart, name).toBe('no');
      else expect(svc.restart, name).toMatch(/^(unless-stopped|always)$/);
    }
  });

  it('every image is pinned to an exact release: no latest, no bare major, in both files', async () => {
    for (const file of ['compose.yaml', 'compose.prod.yaml']) {
      const s = (await compose(file)).services as Obj;
      for (const [name, svc] of Object.entries(s))
        if (svc.image !== undefined && name !== 'worker' && name !== 'server' && name !== 'migrate')
          expect(floatingTag(svc.image), `${file} ${name}`).toBeUndefined();
    }
    // The check refuses what floats.
    for (const ref of [
      'redis:7',
      'redis',
      'postgres:16',
      'minio/minio:latest',
      'node:22-slim',
      'node:22.22-bookworm-slim',
      'axllent/mailpit:v1.31',
    ])
      expect(floatingTag(ref), ref).toBeDefined();
    expect(floatingTag(`postgres:16.15-bookworm@sha256:${'a'.repeat(64)}`)).toBeUndefined();
  });

  it('shutdown is consistent: each process is given its SHUTDOWN_TIMEOUT_SECONDS plus a margin before SIGKILL', async () => {
    const seconds = (v: string | number) =>
      typeof v === 'number' ? v : /^(\d+)s$/.test(v) ? Number(v.slice(0, -1)) : Number(/^(\d+)m$/.exec(v)![1]) * 60;
    for (const file of ['compose.yaml', 'compose.prod.yaml']) {
      const s = (await compose(file)).services as Obj;
      for (const name of ['worker', 'server']) {
        const timeout = Number(s[name].environment.SHUTDOWN_TIMEOUT_SECONDS);
        expect(timeout, `${file} ${name}: SHUTDOWN_TIMEOUT_SECONDS set explicitly`).toBeGreaterThan(0);
        const grace = s[name].stop_grace_period ?? (await compose('compose.yaml')).services[name].stop_grace_period;
        expect(seconds(grace), `${file} ${name}: stop_grace_period`).toBeGreaterThanOrEqual(timeout + 10);
      }
    }
  });

  it('names only variables that src/config.ts knows (or the AWS SDK reads), and the app secrets come from .env', async () => {
    const doc = await compose('compose.yaml');
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

  it('the production variant: no mail catcher, real addresses required, every secret from a file and none inline', async () => {
    const prod = await compose('compose.prod.yaml');
    const s = prod.services as Obj;
    expect(s.mailpit.profiles).toEqual(['mail-catcher']);
    const declared = Object.keys(prod.secrets as Obj);
    for (const [name, secret] of Object.entries(prod.secrets as Obj))
      expect(secret.file, name).toBe(`../secrets/${name}`);
    for (const name of ['worker', 'server', 'migrate']) {
      const env = s[name].environment as Record<string, string>;
      for (const key of ['PUBLIC_URL', 'MEDIA_PUBLIC_URL', 'ALERT_EMAIL_TO'])
        expect(env[key], `${name} ${key}`).toMatch(/^\$\{\w+:\?/);
      for (const key of FILE_SETTINGS.filter((k) => k !== 'REDIS_URL')) {
        // The inline value blanked ("" is unset), the file read instead, and that file mounted.
        expect(env[key], `${name} ${key}`).toBe('');
        const file = env[`${key}_FILE`]!;
        expect(file, `${name} ${key}_FILE`).toMatch(/^\/run\/secrets\//);
        const secret = file.slice('/run/secrets/'.length);
        expect(s[name].secrets, `${name} mounts ${secret}`).toContain(secret);
        expect(declared).toContain(secret);
      }
      for (const key of Object.keys(env)) {
        const base = key.replace(/_FILE$/, '');
        const known =
          CONFIG_KEYS.has(key) ||
          OUTSIDE_CONFIG.has(key) ||
          key === 'AWS_SHARED_CREDENTIALS_FILE' ||
          (key.endsWith('_FILE') && (FILE_SETTINGS as readonly string[]).includes(base));
        expect(known, `${name}: ${key} is not a feedmirror setting`).toBe(true);
      }
    }
    expect(s.postgres.environment.POSTGRES_PASSWORD_FILE).toBe('/run/secrets/postgres_password');
    expect(s.postgres.secrets).toContain('postgres_password');
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
  it('every object validates against the Kubernetes API schemas (kubernetes-models)', () => {
    const models: Record<string, new (o: Obj) => { validate(): void }> = {
      Deployment,
      Service,
      ConfigMap,
      Secret,
      PodDisruptionBudget,
      NetworkPolicy,
      Ingress,
      Namespace,
    };
    const docs = [
      ...k8s(),
      ...yamlDocs(path.join(K8S, 'examples/ingress.yaml')),
      ...yamlDocs(path.join(K8S, 'examples/namespace.yaml')),
    ];
    for (const d of docs) {
      const Model = models[d.kind as string];
      expect(Model, `${d.kind} has a model`).toBeDefined();
      const { __file, ...obj } = d;
      expect(
        () => new Model!(obj).validate(),
        `${path.relative(INFRA, __file as string)} ${d.kind}/${d.metadata?.name}`,
      ).not.toThrow();
    }
    // The schemas do refuse what is wrong.
    expect(() =>
      new Deployment({
        metadata: { name: 'x' },
        spec: { selector: {}, template: { spec: { containers: [{ name: 'a', image: 3 }] } } },
      } as unknown as ConstructorParameters<typeof Deployment>[0]).validate(),
    ).toThrow(/image must be string/);
  });

  it('kubectl apply -k renders the objects, namespace-free, and the Secret template stays out of it', () => {
    const { objects } = renderKustomization(K8S);
    for (const d of objects) expect(d.metadata?.namespace, `${d.__file} must be namespace-free`).toBeUndefined();
    expect(objects.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual(
      [
        'ConfigMap/feedmirror-config-generated',
        'Deployment/feedmirror-server',
        'Deployment/feedmirror-worker',
        'NetworkPolicy/feedmirror-server',
        'NetworkPolicy/feedmirror-worker',
        'PodDisruptionBudget/feedmirror-server',
        'PodDisruptionBudget/feedmirror-worker',
        'Service/feedmirror-server',
      ].sort(),
    );
    // Every YAML file of the folder is applied, but the Secret template (its placeholders never
    // overwrite real values).
    const kust = yamlDocs(path.join(K8S, 'kustomization.yaml'))[0]!;
    const files = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...(kust.resources as string[])].sort()).toEqual(files.sort());
    // Both Deployments run the image kustomization.yaml names.
    for (const d of objects.filter((o) => o.kind === 'Deployment'))
      for (const c of allContainers(d)) expect(c.image, `${d.metadata.name}/${c.name}`).toBe('feedmirror:0.1.0');
  });

  it('the ConfigMap is generated from config.env (its name hashed, so an edit rolls the pods) and every pod reads it', () => {
    const kust = yamlDocs(path.join(K8S, 'kustomization.yaml'))[0]!;
    expect(kust.configMapGenerator).toEqual([{ name: 'feedmirror-config', envs: ['config.env'] }]);
    expect(kust.generatorOptions?.disableNameSuffixHash).toBeUndefined();
    const docs = k8s();
    for (const d of docs.filter((o) => o.kind === 'Deployment'))
      for (const c of allContainers(d))
        expect(c.envFrom, `${d.metadata.name}/${c.name}`).toEqual([
          { configMapRef: { name: 'feedmirror-config-generated' } },
          { secretRef: { name: 'feedmirror-secrets' } },
        ]);
  });

  it("migrations run before a release's code: an init container `migrate` in every pod, no Job that a second release could not re-apply", () => {
    const docs = k8s();
    expect(docs.filter((d) => d.kind === 'Job')).toEqual([]);
    for (const d of docs.filter((o) => o.kind === 'Deployment')) {
      const init = podSpec(d).initContainers as Obj[];
      expect(
        init.map((c) => c.name),
        d.metadata.name,
      ).toEqual(['migrate']);
      expect(init[0]!.args).toEqual(['migrate']);
      expect(init[0]!.image).toBe(podSpec(d).containers[0].image);
    }
  });

  it('the restricted Pod Security Standard: every pod and container, init containers included', () => {
    for (const d of k8s().filter((o) => o.kind === 'Deployment')) {
      const spec = podSpec(d);
      const name = d.metadata.name as string;
      expect(spec.automountServiceAccountToken, name).toBe(false);
      for (const host of ['hostNetwork', 'hostPID', 'hostIPC']) expect(spec[host], `${name} ${host}`).toBeFalsy();
      expect(spec.securityContext, name).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(spec.securityContext.runAsUser, name).toBeGreaterThan(0);
      for (const v of (spec.volumes ?? []) as Obj[])
        expect(Object.keys(v).sort(), `${name} volume ${v.name}`).toEqual(['emptyDir', 'name']);
      for (const c of allContainers(d)) {
        const sc = c.securityContext as Obj;
        expect(sc, `${name}/${c.name}`).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(sc.privileged, `${name}/${c.name}`).toBeFalsy();
        expect(sc.capabilities.add, `${name}/${c.name}`).toBeUndefined();
        expect(sc.runAsUser ?? spec.securityContext.runAsUser, `${name}/${c.name}`).toBeGreaterThan(0);
        for (const p of (c.ports ?? []) as Obj[]) expect(p.hostPort, `${name}/${c.name}`).toBeUndefined();
      }
    }
  });

  it('graceful shutdown end to end: SHUTDOWN_TIMEOUT_SECONDS set on each, the grace period above it (and above preStop plus it)', () => {
    const docs = k8s();
    for (const [name, margin] of [
      ['feedmirror-worker', 15],
      ['feedmirror-server', 5],
    ] as const) {
      const d = byKindName(docs, 'Deployment', name);
      const c = podSpec(d).containers[0] as Obj;
      const timeout = Number(envOf(c).SHUTDOWN_TIMEOUT_SECONDS);
      expect(timeout, `${name}: SHUTDOWN_TIMEOUT_SECONDS set explicitly`).toBeGreaterThan(0);
      const preStop = c.lifecycle?.preStop?.exec?.command as string[] | undefined;
      const pause = preStop ? Number(preStop[1]) : 0;
      expect(podSpec(d).terminationGracePeriodSeconds, name).toBeGreaterThanOrEqual(pause + timeout + margin);
    }
  });

  it('worker: 3 replicas, no HTTP probes, /metrics on a named port that its env and annotations agree on', () => {
    const docs = k8s();
    const w = byKindName(docs, 'Deployment', 'feedmirror-worker');
    expect(w.spec.replicas).toBe(3);
    const c = podSpec(w).containers[0] as Obj;
    expect(c.args).toEqual(['worker']);
    // It serves no HTTP traffic: a readiness probe means nothing, a liveness probe on Redis restarts loops.
    expect(c.readinessProbe).toBeUndefined();
    expect(c.livenessProbe).toBeUndefined();
    expect(w.spec.selector.matchLabels).toEqual(w.spec.template.metadata.labels);
    const env = envOf(c);
    expect(env.METRICS_HOST).toBe('0.0.0.0');
    const port = (c.ports as Obj[]).find((p) => p.name === 'metrics')!;
    expect(env.METRICS_PORT).toBe(String(port.containerPort));
    const ann = w.spec.template.metadata.annotations;
    expect(ann['prometheus.io/port']).toBe(String(port.containerPort));
    expect(ann['prometheus.io/path']).toBe('/metrics');
    // Worker-only: the server shares the ConfigMap and must not get these.
    const cm = byKindName(docs, 'ConfigMap', 'feedmirror-config');
    expect(cm.data.METRICS_PORT).toBeUndefined();
    expect(byKindName(docs, 'PodDisruptionBudget', 'feedmirror-worker').spec.selector.matchLabels).toEqual(
      w.spec.selector.matchLabels,
    );
  });

  it('server: readiness is "this process answers" (/serving), liveness /healthz, a preStop pause, a PDB, the Service selecting it', () => {
    const docs = k8s();
    const s = byKindName(docs, 'Deployment', 'feedmirror-server');
    const c = podSpec(s).containers[0] as Obj;
    expect(c.args).toEqual(['serve']);
    expect(c.readinessProbe.httpGet.path).toBe('/serving');
    expect(c.livenessProbe.httpGet.path).toBe('/healthz');
    expect(c.lifecycle.preStop.exec.command[0]).toBe('sleep');
    expect(Number(c.lifecycle.preStop.exec.command[1])).toBeGreaterThanOrEqual(5);
    expect(s.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
    // Scraped with the token (monitoring/), never by annotation: a plain scrape gets 401.
    expect(s.spec.template.metadata.annotations?.['prometheus.io/scrape']).toBeUndefined();
    const port = (c.ports as Obj[]).find((p) => p.name === 'http')!;
    expect(port.containerPort).toBe(8080);
    const svc = byKindName(docs, 'Service', 'feedmirror-server');
    expect(svc.spec.selector).toEqual(s.spec.template.metadata.labels);
    expect(svc.spec.ports[0].targetPort).toBe('http');
    const pdb = byKindName(docs, 'PodDisruptionBudget', 'feedmirror-server');
    expect(pdb.spec.selector.matchLabels).toEqual(s.spec.selector.matchLabels);
    expect(pdb.spec.minAvailable).toBeGreaterThanOrEqual(1);
    expect(pdb.spec.minAvailable).toBeLessThan(s.spec.replicas);
    const cm = byKindName(docs, 'ConfigMap', 'feedmirror-config');
    expect(cm.data.PORT).toBe(String(port.containerPort));
    expect(cm.data.HOST).toBe('0.0.0.0');
  });

  it('NetworkPolicy: each component takes traffic on its one named port only', () => {
    const docs = k8s();
    for (const [component, port] of [
      ['server', 'http'],
      ['worker', 'metrics'],
    ]) {
      const np = byKindName(docs, 'NetworkPolicy', `feedmirror-${component}`);
      const d = byKindName(docs, 'Deployment', `feedmirror-${component}`);
      expect(np.spec.podSelector.matchLabels).toEqual(d.spec.selector.matchLabels);
      expect(np.spec.policyTypes).toEqual(['Ingress']);
      expect(np.spec.ingress.flatMap((r: Obj) => r.ports.map((p: Obj) => p.port))).toEqual([port]);
      expect((podSpec(d).containers[0].ports as Obj[]).map((p) => p.name)).toContain(port);
    }
  });

  it('monitoring: a ServiceMonitor that sends METRICS_TOKEN from the Secret, a PodMonitor for the workers', () => {
    const { objects } = renderKustomization(path.join(K8S, 'monitoring'));
    const sm = byKindName(objects, 'ServiceMonitor', 'feedmirror-server');
    expect(sm.apiVersion).toBe('monitoring.coreos.com/v1');
    const svc = byKindName(k8s(), 'Service', 'feedmirror-server');
    expect(sm.spec.selector.matchLabels).toEqual(svc.metadata.labels);
    expect(sm.spec.endpoints).toEqual([
      expect.objectContaining({
        port: svc.spec.ports[0].name,
        path: '/metrics',
        authorization: { type: 'Bearer', credentials: { name: 'feedmirror-secrets', key: 'METRICS_TOKEN' } },
      }),
    ]);
    const secret = byKindName(k8s(), 'Secret', 'feedmirror-secrets');
    expect(secret.stringData.METRICS_TOKEN).toBeDefined();
    const pm = byKindName(objects, 'PodMonitor', 'feedmirror-worker');
    const w = byKindName(k8s(), 'Deployment', 'feedmirror-worker');
    expect(pm.spec.selector.matchLabels).toEqual(w.spec.selector.matchLabels);
    expect(pm.spec.podMetricsEndpoints[0].port).toBe('metrics');
  });

  it('secrets are referenced, never inlined; the template holds placeholders only (R-TOK-11)', () => {
    const docs = k8s();
    const secret = byKindName(docs, 'Secret', 'feedmirror-secrets');
    for (const key of SECRET_KEYS) expect(secret.stringData[key], key).toMatch(/^REPLACE_ME/);
    for (const v of Object.values(secret.stringData as Record<string, string>)) expect(v).toMatch(/^REPLACE_ME/);
    const cm = byKindName(docs, 'ConfigMap', 'feedmirror-config');
    for (const key of [...SECRET_KEYS, 'REDIS_URL', 'AWS_SECRET_ACCESS_KEY', 'METRICS_TOKEN', 'SESSION_SECRET'])
      expect(cm.data[key], `${key} must not be in the ConfigMap`).toBeUndefined();
    // Redis Cluster: the prefix is in braces, so a queue's keys share one hash slot.
    expect(cm.data.REDIS_PREFIX).toMatch(/^\{[^{}]+\}$/);
    for (const d of docs.filter((x) => x.kind === 'Deployment'))
      for (const c of allContainers(d))
        for (const e of (c.env ?? []) as Obj[])
          if (SECRET_KEYS.includes(e.name)) expect(e.valueFrom?.secretKeyRef, e.name).toBeDefined();
  });

  it('every variable the manifests set is a setting of src/config.ts (or read by the AWS SDK)', () => {
    const docs = k8s();
    const names = new Set<string>();
    for (const d of docs) {
      if (d.kind === 'ConfigMap') Object.keys(d.data).forEach((k) => names.add(k));
      if (d.kind === 'Secret') Object.keys(d.stringData ?? d.data).forEach((k) => names.add(k));
      if (d.kind === 'Deployment')
        for (const c of allContainers(d)) for (const e of (c.env ?? []) as Obj[]) names.add(e.name);
    }
    expect(names.size).toBeGreaterThan(10);
    for (const n of names)
      expect(CONFIG_KEYS.has(n) || OUTSIDE_CONFIG.has(n), `${n} is not a feedmirror setting`).toBe(true);
    for (const key of SECRET_KEYS) expect(names.has(key), key).toBe(true);
    // config.env as kustomize reads it: KEY=value lines, no quotes to leak into values.
    const env = parseKustomizeEnv(readFileSync(path.join(K8S, 'config.env'), 'utf8'));
    for (const v of Object.values(env)) expect(v).not.toMatch(/^["']/);
  });
});

describe('systemd units (infra/systemd)', () => {
  const UNITS = ['feedmirror-worker.service', 'feedmirror-serve.service'];
  const unit = (name: string) => {
    const text = readFileSync(path.join(INFRA, 'systemd', name), 'utf8');
    const values = (key: string) =>
      [...text.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].flatMap((v) => v[1]!.trim().split(/\s+/));
    const one = (key: string) => values(key).join(' ');
    return { text, values, one };
  };

  it('pass systemd-analyze verify (with the release and node where this machine has them)', () => {
    // verify needs ExecStart's program to exist: the copies point at this machine's node.
    const dir = mkdtempSync(path.join(tmpdir(), 'fm-systemd-'));
    for (const name of UNITS)
      writeFileSync(path.join(dir, name), unit(name).text.replaceAll('/usr/bin/node', process.execPath));
    const r = spawnSync('systemd-analyze', ['verify', ...UNITS.map((n) => path.join(dir, n))], { encoding: 'utf8' });
    expect(r.error, 'systemd-analyze (Debian package systemd) must be installed').toBeUndefined();
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    // It does refuse a unit whose program is missing.
    writeFileSync(
      path.join(dir, 'broken.service'),
      unit(UNITS[0]!).text.replaceAll('/usr/bin/node', '/nonexistent/node'),
    );
    expect(spawnSync('systemd-analyze', ['verify', path.join(dir, 'broken.service')]).status).not.toBe(0);
  });

  it('each runs a feedmirror command from the current release as the service user, with the root-owned env file', () => {
    for (const name of UNITS) {
      const u = unit(name);
      expect(u.values('ExecStart').slice(0, 2), name).toEqual([
        '/usr/bin/node',
        '/opt/feedmirror/current/bin/feedmirror.js',
      ]);
      expect(u.values('ExecStart')[2], name).toBe(name === 'feedmirror-worker.service' ? 'worker' : 'serve');
      expect(u.one('WorkingDirectory'), name).toBe('/opt/feedmirror/current');
      expect(u.one('User'), name).toBe('feedmirror');
      expect(u.one('Group'), name).toBe('feedmirror');
      expect(u.one('EnvironmentFile'), name).toBe('/etc/feedmirror/env');
    }
  });

  it('each waits for the network it orders itself after: After=network-online.target with Wants= (systemd brings it up only when wanted)', () => {
    for (const name of UNITS) {
      const u = unit(name);
      expect(u.values('After'), name).toContain('network-online.target');
      expect(u.values('Wants'), name).toContain('network-online.target');
    }
  });

  it('a dependency outage of any length never leaves a unit failed: RestartSec paces the restarts under the start limit', () => {
    for (const name of UNITS) {
      const u = unit(name);
      expect(u.one('Restart'), name).toBe('always');
      const restartSec = Number(u.one('RestartSec').replace(/s$/, ''));
      const interval = Number(u.one('StartLimitIntervalSec'));
      const burst = Number(u.one('StartLimitBurst'));
      expect(restartSec, name).toBeGreaterThanOrEqual(5);
      // Starts in any window of StartLimitIntervalSec, each failing at once: interval / RestartSec + 1.
      expect(Math.floor(interval / restartSec) + 1, name).toBeLessThan(burst);
    }
  });

  it('stop: TimeoutStopSec above the SHUTDOWN_TIMEOUT_SECONDS that init writes', async () => {
    const env = await readFile(path.resolve('.env.example'), 'utf8');
    const timeout = Number(/^SHUTDOWN_TIMEOUT_SECONDS=(\d+)$/m.exec(env)![1]);
    for (const name of UNITS)
      expect(Number(unit(name).one('TimeoutStopSec')), name).toBeGreaterThanOrEqual(timeout + 15);
  });

  it('hardened: no new privileges, a read-only system but its data folder, private /tmp, no home, no capabilities', () => {
    for (const name of UNITS) {
      const u = unit(name);
      for (const [key, value] of [
        ['NoNewPrivileges', 'yes'],
        ['ProtectSystem', 'strict'],
        ['ReadWritePaths', '/var/lib/feedmirror'],
        ['PrivateTmp', 'yes'],
        ['ProtectHome', 'yes'],
        ['PrivateDevices', 'yes'],
        ['CapabilityBoundingSet', ''],
      ])
        expect(u.one(key!), `${name} ${key}`).toBe(value);
      expect(u.text, name).toMatch(/^CapabilityBoundingSet=$/m);
      // V8 writes the machine code it compiles: MemoryDenyWriteExecute would kill node.
      expect(u.text, name).not.toMatch(/^MemoryDenyWriteExecute=yes/m);
    }
  });

  it('docs/production.md ships the units as files, not copies to drift from', async () => {
    const doc = await readFile(path.resolve('docs/production.md'), 'utf8');
    expect(doc).not.toMatch(/```ini\n# \/etc\/systemd\//);
    for (const name of UNITS) expect(doc).toContain(`infra/systemd/${name}`);
  });
});
