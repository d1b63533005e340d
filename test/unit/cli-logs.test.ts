import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { logChoice, loggerFor } from '../../src/cli/log-setup.ts';
import { humanLogLine } from '../../src/util/log-lines.ts';
import { registerSecret } from '../../src/util/redact.ts';
import { registerSecretForAudit } from '../support/capture.ts';

/**
 * Which logs a process writes and how: a command on a terminal writes short human lines at warn
 * and above; a command in a pipe, the worker and the server write JSON at info; LOG_FORMAT and
 * LOG_LEVEL override both. Human lines pass the same redaction as JSON ones (R-TOK-11, R-LNK-7).
 */
const terminal = () => {
  let text = '';
  return { isTTY: true, write: (s: string) => ((text += s), true), text: () => text };
};
const unset = loadConfig({});

describe('log format and level', () => {
  it('a command on a terminal: human lines, warn and above; in a pipe: JSON at info', () => {
    expect(logChoice(unset, { role: 'command', terminal: true })).toEqual({ format: 'human', level: 'warn' });
    expect(logChoice(unset, { role: 'command', terminal: false })).toEqual({ format: 'json', level: 'info' });
  });

  it('worker and serve keep JSON at info on a terminal too', () => {
    expect(logChoice(unset, { role: 'service', terminal: true })).toEqual({ format: 'json', level: 'info' });
    expect(logChoice(unset, { role: 'service', terminal: false })).toEqual({ format: 'json', level: 'info' });
  });

  it('LOG_FORMAT and LOG_LEVEL win wherever they are set; an empty value is unset', () => {
    const json = loadConfig({ LOG_FORMAT: 'json' });
    expect(logChoice(json, { role: 'command', terminal: true })).toEqual({ format: 'json', level: 'info' });
    const human = loadConfig({ LOG_FORMAT: 'human', LOG_LEVEL: 'info' });
    expect(logChoice(human, { role: 'service', terminal: false })).toEqual({ format: 'human', level: 'info' });
    expect(logChoice(loadConfig({ LOG_LEVEL: 'debug' }), { role: 'command', terminal: true })).toEqual({
      format: 'human',
      level: 'debug',
    });
    expect(logChoice(loadConfig({ LOG_LEVEL: '', LOG_FORMAT: '' }), { role: 'command', terminal: true })).toEqual({
      format: 'human',
      level: 'warn',
    });
    expect(() => loadConfig({ LOG_FORMAT: 'pretty' })).toThrow(/LOG_FORMAT/);
  });
});

describe('human log lines', () => {
  it('a command logger on a terminal writes warnings as one short line each, and no info', () => {
    const out = terminal();
    const logger = loggerFor(unset, { role: 'command', log: out });
    logger.info({ accountId: '17841400000000001' }, 'sync started');
    logger.warn({ accountId: '17841400000000001', err: new Error('connect ECONNREFUSED 127.0.0.1:9') }, 'copy failed');
    logger.error('verify: the stores disagree');
    expect(out.text()).toBe(
      'warning: copy failed: connect ECONNREFUSED 127.0.0.1:9 (accountId=17841400000000001)\n' +
        'error: verify: the stores disagree\n',
    );
  });

  it('a service logger on a terminal writes nothing there as human lines (its JSON goes to file descriptor 2)', () => {
    const out = terminal();
    loggerFor(unset, { role: 'service', log: out }).warn('redis went away');
    expect(out.text()).toBe('');
  });

  it('tokens in URLs, secret-named fields and registered secrets never reach a human line (R-TOK-11, R-LNK-7)', () => {
    const secret = 'app-secret-for-the-human-lines-test';
    registerSecret(secret);
    registerSecretForAudit(secret);
    const out = terminal();
    const logger = loggerFor(loadConfig({ LOG_LEVEL: 'info' }), { role: 'command', log: out });
    logger.warn(
      { url: 'https://graph.example/me/media?access_token=IGQVJsecret123', accessToken: 'IGQVJsecret456' },
      `refused with ${secret}`,
    );
    logger.error({ err: new Error(`token=IGQVJsecret789 was refused`) }, 'refresh failed');
    const text = out.text();
    expect(text).not.toMatch(/IGQVJsecret|app-secret-for/);
    expect(text).toContain('url=https://graph.example/me/media?…');
    expect(text).toContain('accessToken=[redacted]');
    expect(text).toContain('refused with [redacted]');
    expect(text).toContain('refresh failed: token=[redacted] was refused');
    // Once more on the line itself, whatever the record held.
    expect(humanLogLine({ level: 40, msg: `leaked ${secret}` })).toBe('warning: leaked [redacted]\n');
  });

  it('a line stays a line: newlines folded, at most six fields, long values cut', () => {
    const line = humanLogLine({
      level: 30,
      time: 1,
      name: 'feedmirror',
      msg: 'two\nlines',
      a: 1,
      b: true,
      c: 'x'.repeat(200),
      d: { nested: 1 },
      e: 5,
      f: 6,
      g: 7,
    });
    expect(line.split('\n')).toHaveLength(2);
    expect(line).toMatch(/^info: two lines \(a=1, b=true, c=x{79}…, d=\{"nested":1\}, e=5, f=6\)\n$/);
  });
});
