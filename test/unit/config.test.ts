import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

/** Configuration: one zod module, errors that name the variable and never echo its value. */
describe('loadConfig', () => {
  it('gives the documented defaults on an empty environment', () => {
    const c = loadConfig({});
    expect(c.GRAPH_URL).toBe('https://graph.instagram.com');
    expect(c.GRAPH_API_VERSION).toBe('v25.0');
    expect(c.HEAP_GROWTH_PERCENT).toBe(30);
    expect(c.REFRESH_CHECK_HOURS).toBe(6);
  });

  it('pins only a version feedmirror knows; the warning lead is a number of days (R-MED-13)', () => {
    expect(loadConfig({ GRAPH_API_VERSION: 'v26.0' }).GRAPH_API_VERSION).toBe('v26.0');
    expect(loadConfig({}).PLATFORM_VERSION_WARN_DAYS).toBe(90);
    expect(loadConfig({ PLATFORM_VERSION_WARN_DAYS: '120' }).PLATFORM_VERSION_WARN_DAYS).toBe(120);
    for (const [name, value, says] of [
      ['GRAPH_API_VERSION', 'v24.0', 'must be a version feedmirror knows: v25.0, v26.0'],
      ['GRAPH_API_VERSION', 'latest', 'must be a version feedmirror knows'],
      ['PLATFORM_VERSION_WARN_DAYS', '0', 'PLATFORM_VERSION_WARN_DAYS'],
      ['PLATFORM_VERSION_WARN_DAYS', 'soon', 'PLATFORM_VERSION_WARN_DAYS'],
    ] as const) {
      let err: unknown;
      try {
        loadConfig({ [name]: value });
      } catch (e) {
        err = e;
      }
      expect(err, `${name}=${value}`).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain(name);
      expect((err as Error).message).toContain(says);
    }
  });

  it('treats an empty value as unset (FOO= in an env file means the default)', () => {
    expect(loadConfig({ HEAP_GROWTH_PERCENT: '' }).HEAP_GROWTH_PERCENT).toBe(30);
    expect(loadConfig({ HEAP_GROWTH_PERCENT: '0' }).HEAP_GROWTH_PERCENT).toBe(0);
  });

  it.each([['-5'], ['401'], ['12.5'], ['lots']])('refuses HEAP_GROWTH_PERCENT=%s and names the variable', (value) => {
    let err: unknown;
    try {
      loadConfig({ HEAP_GROWTH_PERCENT: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('HEAP_GROWTH_PERCENT');
  });

  it('names a bad secret without echoing its value', () => {
    const key = 'not-a-valid-key-but-secret-looking-0123456789';
    let message = '';
    try {
      loadConfig({ TOKEN_ENCRYPTION_KEY: key, DASHBOARD_PASSWORD: 'short' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('DASHBOARD_PASSWORD');
    expect(message).not.toContain('short');
    expect(message).not.toContain(key);
  });
});

describe('secrets from files (<NAME>_FILE, as container secrets deliver them)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fm-config-file-'));
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };

  it('reads the value from the file, without its trailing line break', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const c = loadConfig({
      TOKEN_ENCRYPTION_KEY_FILE: write('key', `${key}\n`),
      SMTP_URL_FILE: write('smtp', 'smtp://u:p@mail.example.test:587'),
      ALERT_EMAIL_TO: 'ops@example.test',
    });
    expect(c.TOKEN_ENCRYPTION_KEY).toBe(key);
    expect(c.SMTP_URL).toBe('smtp://u:p@mail.example.test:587');
  });

  it('refuses both forms at once, and names an unreadable file without reading anything else', () => {
    const both = () => loadConfig({ APP_SECRET: 'x', APP_SECRET_FILE: write('app', 'y') });
    expect(both).toThrow(ConfigError);
    expect(both).toThrow('APP_SECRET and APP_SECRET_FILE are both set: keep one');
    const missing = () => loadConfig({ METRICS_TOKEN_FILE: join(dir, 'nope') });
    expect(missing).toThrow(`METRICS_TOKEN_FILE: cannot read ${join(dir, 'nope')} (ENOENT)`);
  });

  it('an empty file counts as unset, as NAME= does', () => {
    expect(loadConfig({ METRICS_TOKEN_FILE: write('empty', '\n') }).METRICS_TOKEN).toBeUndefined();
  });

  it('an empty <NAME>= beside <NAME>_FILE counts as unset (a compose override blanks the inline value)', () => {
    expect(
      loadConfig({ DASHBOARD_PASSWORD: '', DASHBOARD_PASSWORD_FILE: write('pw', 'correct horse') }).DASHBOARD_PASSWORD,
    ).toBe('correct horse');
  });
});
