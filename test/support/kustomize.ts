import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';

// Parsed YAML of arbitrary shape: `any` keeps the many nested key checks readable.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type Obj = Record<string, any>;

/** The documents of a YAML file, each with the file it came from. */
export function yamlDocs(file: string): Obj[] {
  const out: Obj[] = [];
  for (const d of parseAllDocuments(readFileSync(file, 'utf8'))) {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    const js = d.toJS() as Obj | null;
    if (js) out.push({ ...js, __file: file });
  }
  return out;
}

/** KEY=value lines as kustomize's `envs:` reads them: # comments and blank lines skipped, no quoting. */
export function parseKustomizeEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`not KEY=value: ${line}`);
    out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

/**
 * What `kubectl kustomize <dir>` renders, for the features infra/k8s uses (resources listed as
 * files, configMapGenerator with envs, images), so the manifests are validated as they are applied
 * without kubectl: the generated ConfigMap gets a hash-like suffix and every configMapRef to it is
 * renamed, as kustomize does (its real hash depends on the content; here a stand-in).
 */
export function renderKustomization(dir: string): { kustomization: Obj; objects: Obj[] } {
  const kustomization = yamlDocs(join(dir, 'kustomization.yaml'))[0]!;
  const objects = (kustomization.resources as string[]).flatMap((r) => yamlDocs(join(dir, r)));
  const renamed = new Map<string, string>();
  for (const gen of (kustomization.configMapGenerator ?? []) as Obj[]) {
    const data: Record<string, string> = {};
    for (const env of (gen.envs ?? []) as string[])
      Object.assign(data, parseKustomizeEnv(readFileSync(join(dir, env), 'utf8')));
    const name = `${gen.name}-generated`;
    renamed.set(gen.name as string, name);
    objects.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name },
      data,
      __file: join(dir, 'kustomization.yaml'),
    });
  }
  const images = new Map(((kustomization.images ?? []) as Obj[]).map((i) => [i.name as string, i]));
  for (const o of objects) {
    const spec = o.kind === 'Deployment' || o.kind === 'Job' ? o.spec.template.spec : undefined;
    if (!spec) continue;
    for (const c of [...((spec.initContainers ?? []) as Obj[]), ...(spec.containers as Obj[])]) {
      const img = images.get(c.image as string);
      if (img) c.image = `${img.newName ?? c.image}:${img.newTag}`;
      for (const ref of (c.envFrom ?? []) as Obj[])
        if (ref.configMapRef && renamed.has(ref.configMapRef.name))
          ref.configMapRef.name = renamed.get(ref.configMapRef.name);
    }
  }
  return { kustomization: { ...kustomization, __dir: dir }, objects };
}

export const relativeTo = (root: string, file: string) => file.slice(dirname(root).length + 1);
