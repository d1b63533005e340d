import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.ts';
import { ownerLine } from '../../src/cli/commands/accounts.ts';
import { memoryIO } from '../support/memory-io.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const tracked = (): string[] =>
  execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
const markdown = () => tracked().filter((f) => f.endsWith('.md') && existsSync(join(ROOT, f)));

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

describe('the documentation', () => {
  it('every relative link in the README and the docs resolves, anchors included', () => {
    const broken: string[] = [];
    for (const file of markdown()) {
      const abs = join(ROOT, file);
      const text = readFileSync(abs, 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const dest = path === '' ? abs : join(dirname(abs), path);
        if (!existsSync(dest)) {
          broken.push(`${file}: ${target} (no such file)`);
          continue;
        }
        if (anchor && statSync(dest).isFile() && dest.endsWith('.md') && !anchorsOf(dest).has(anchor)) {
          broken.push(`${file}: ${target} (no heading #${anchor} in ${relative(ROOT, dest)})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('every page under docs/ is reachable from the README', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const pages = tracked().filter((f) => /^docs\/[^/]+\.md$/.test(f));
    expect(pages.length).toBeGreaterThan(5);
    expect(pages.filter((p) => !readme.includes(`](${p})`))).toEqual([]);
  });

  it('the README is a front page, not the manual', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(250);
  });

  it('code, tests, migrations and docs say what and why, never which work item asked for it', () => {
    // Built from parts so that this file does not match itself.
    const pattern = new RegExp(['\\b(iss', 'ue|st', 'op) ?#?[0-9]+'].join(''), 'i');
    const offenders: string[] = [];
    for (const file of tracked()) {
      if (file === 'package-lock.json' || /\.(svg|png|jpe?g|gz)$/.test(file) || !existsSync(join(ROOT, file))) continue;
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          // An upstream project's issue URL is a reference, not a work item of ours.
          if (pattern.test(line) && !/https?:\/\//.test(line))
            offenders.push(`${file}:${i + 1}: ${line.trim().slice(0, 100)}`);
        });
    }
    expect(offenders).toEqual([]);
  });

  it("docs/operating.md's command list names every command of `feedmirror --help`, and every subcommand", () => {
    const doc = readFileSync(join(ROOT, 'docs/operating.md'), 'utf8');
    const start = doc.indexOf('## The command line');
    const block = /```\n([\s\S]*?)```/.exec(doc.slice(start))![1]!;
    // `feedmirror accounts add|invite|list` or `feedmirror feeds get <id>`: a command, then its subcommands.
    const listed = new Map<string, Set<string>>();
    for (const line of block.split('\n').filter((l) => l.startsWith('feedmirror '))) {
      const [, name, subs] = line.split(/\s+/);
      const set = listed.get(name!) ?? new Set<string>();
      if (subs && /^[a-z-]+(\|[a-z-]+)*$/.test(subs)) for (const s of subs.split('|')) set.add(s);
      listed.set(name!, set);
    }
    const program = buildProgram({ io: memoryIO(), setExit: () => undefined });
    const help = program.createHelp();
    const missing: string[] = [];
    for (const cmd of help.visibleCommands(program).filter((c) => c.name() !== 'help')) {
      if (!listed.has(cmd.name())) missing.push(cmd.name());
      for (const sub of help.visibleCommands(cmd).filter((c) => c.name() !== 'help'))
        if (!listed.get(cmd.name())?.has(sub.name())) missing.push(`${cmd.name()} ${sub.name()}`);
    }
    expect(missing).toEqual([]);
    // And nothing that is not a command (a hidden or removed one).
    const known = new Set(program.commands.map((c) => c.name()));
    expect([...listed.keys()].filter((n) => !known.has(n))).toEqual([]);
  });

  it("the five-minute tour's owner line is what `accounts show` prints for an invited owner", () => {
    const doc = readFileSync(join(ROOT, 'docs/getting-started.md'), 'utf8');
    const documented = /^ {3}(owner: .*)$/m.exec(doc)?.[1];
    expect(documented).toBe(ownerLine({ email: 'owner@harbour-cafe.example', name: null, alerts: true }, true));
  });

  it('infra/README.md and the compose file start the same way: feedmirror init writes .env, then compose', () => {
    const readme = readFileSync(join(ROOT, 'infra/README.md'), 'utf8');
    const compose = readFileSync(join(ROOT, 'infra/compose.yaml'), 'utf8');
    const section = readme.slice(
      readme.indexOf('## Compose'),
      readme.indexOf('\n## ', readme.indexOf('## Compose') + 1),
    );
    const commands = (text: string, prefix: RegExp) =>
      text
        .split('\n')
        .map((l) =>
          prefix
            .exec(l)?.[1]
            ?.replace(/\s+#.*$/, '')
            .trim(),
        )
        .filter((c): c is string => !!c);
    const fromReadme = commands(/```sh\n([\s\S]*?)```/.exec(section)![1]!, /^(\S.*)$/);
    const fromCompose = commands(compose.slice(0, compose.indexOf('\nname:')), /^# {3}(\S.*)$/);
    expect(fromReadme).toEqual(fromCompose);
    expect(fromReadme).toContain('npx feedmirror init');
    expect(readme).not.toContain('cp .env.example .env');
  });
});
