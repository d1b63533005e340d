import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { memoryIO } from '../support/memory-io.ts';

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url));

const mio = (stdin = '', cwd = fixtures) => memoryIO({ stdin, cwd });

describe('feedmirror validate', () => {
  it('a valid file: exit 0 and "valid: <file> (N posts)"', async () => {
    const io = mio();
    expect(await main(['validate', 'feed-v1-valid.json'], io)).toBe(0);
    expect(io.out()).toBe('valid: feed-v1-valid.json (7 posts)\n');
    expect(io.err()).toBe('');
  });

  it('a feed with the sizes and placeholder extension fields is valid; malformed ones are refused with their paths', async () => {
    const ok = mio();
    expect(await main(['validate', 'feed-v1-extended.json'], ok)).toBe(0);
    expect(ok.out()).toBe('valid: feed-v1-extended.json (7 posts)\n');
    const bad = mio();
    expect(await main(['validate', 'feed-v1-extended-broken.json'], bad)).toBe(1);
    const lines = bad.out().trimEnd().split('\n');
    expect(lines).toContain('$.posts[0].thumbnailSizes[1].url: must be an http:// or https:// URL');
    expect(lines).toContain('$.posts[0].thumbnailPlaceholder.color: must be a #rrggbb colour');
    expect(lines).toContain('$.posts[1].thumbnailSizes: must list at least one size when present');
    expect(lines.at(-1)).toBe('invalid: feed-v1-extended-broken.json (13 problems)');
  });

  it('a hand-broken copy: exit 1, each problem on its own line with its JSON path, then a summary', async () => {
    const io = mio();
    expect(await main(['validate', 'feed-v1-broken.json'], io)).toBe(1);
    expect(io.out().trimEnd().split('\n')).toEqual([
      '$.origin.url: must be an http:// or https:// URL',
      '$.posts[0].thumbnailUrl: required when type is image, video or carousel',
      '$.posts[1].media[0].mime: must be a MIME type starting with image/, video/ or audio/',
      '$.posts[2].stats.saves: unknown key, not allowed (stats holds only likes, comments, views, shares)',
      '$.posts[5].link: required when type is link',
      '$.posts[6].publishedAt: must be an ISO 8601 date-time with Z or a ±hh:mm offset (e.g. 2024-05-01T12:00:00+00:00)',
      'invalid: feed-v1-broken.json (6 problems)',
    ]);
  });

  it('--json prints the result as JSON, same exit codes', async () => {
    const ok = mio();
    expect(await main(['validate', '--json', 'feed-v1-valid.json'], ok)).toBe(0);
    expect(JSON.parse(ok.out())).toEqual({ valid: true, file: 'feed-v1-valid.json', posts: 7 });
    const bad = mio();
    expect(await main(['validate', 'feed-v1-broken.json', '--json'], bad)).toBe(1);
    const r = JSON.parse(bad.out());
    expect(r.valid).toBe(false);
    expect(r.problems).toHaveLength(6);
    expect(r.problems[1]).toEqual({
      path: '$.posts[0].thumbnailUrl',
      message: 'required when type is image, video or carousel',
    });
  });

  it('reads stdin with -', async () => {
    const { readFileSync } = await import('node:fs');
    const io = mio(readFileSync(join(fixtures, 'feed-v1-valid.json'), 'utf8'));
    expect(await main(['validate', '-'], io)).toBe(0);
    expect(io.out()).toBe('valid: <stdin> (7 posts)\n');
    const bad = mio('{"schemaVersion":1}');
    expect(await main(['validate', '-'], bad)).toBe(1);
    expect(bad.out()).toContain('$.posts: required');
  });

  it('a relative path is read from the cwd given in CliIO', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedmirror-validate-'));
    copyFileSync(join(fixtures, 'feed-v1-valid.json'), join(dir, 'feed.json'));
    expect(await main(['validate', 'feed.json'], mio('', dir))).toBe(0);
  });

  it.each([
    ['a missing file', ['no-such-feed.json'], '', /cannot read no-such-feed\.json: no such file/],
    ['empty stdin', ['-'], '  \n', /<stdin> is empty/],
    ['not JSON', ['-'], '{"schemaVersion": 1,', /<stdin> is not JSON/],
    ['no file argument', [], '', /missing required argument 'file'/],
    ['two files', ['a.json', 'b.json'], '', /too many arguments/],
    ['an unknown option', ['--strict', 'a.json'], '', /unknown option '--strict'/],
  ])('%s: a clear message on stderr, exit 2', async (_, argv, stdin, message) => {
    const io = mio(stdin);
    expect(await main(['validate', ...argv], io)).toBe(2);
    expect(io.err()).toMatch(message);
    expect(io.out()).toBe('');
  });

  it('an empty file: exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'feedmirror-validate-'));
    writeFileSync(join(dir, 'empty.json'), '');
    const io = mio('', dir);
    expect(await main(['validate', 'empty.json'], io)).toBe(2);
    expect(io.err()).toMatch(/empty\.json is empty/);
  });
});
