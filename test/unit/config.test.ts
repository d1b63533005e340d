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
