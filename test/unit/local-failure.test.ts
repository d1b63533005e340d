import { describe, expect, it } from 'vitest';
import { errorKind, localFailure } from '../../src/util/error-kinds.ts';
import { describeFailure, jsonFailureOf } from '../../src/cli/failure.ts';
import { DisallowedHostError, DownloadError, LinkExpiredError, TooLargeError } from '../../src/mirror/errors.ts';
import {
  InsufficientDeveloperRoleError,
  MalformedResponseError,
  MissingScopeError,
  PersonalAccountError,
  PlatformRequestError,
  RateLimitedError,
  RunawayListingError,
  TokenExpiredError,
  TokenInvalidError,
  TokenTooYoungError,
  TransientError,
} from '../../src/platform/errors.ts';
import { InvalidKeyError, StorageError, StorageUnavailableError } from '../../src/storage/errors.ts';
import { DatabaseUnavailableError, EncryptionKeyError, TokenDecryptError } from '../../src/store/errors.ts';
import { ServiceUnavailableError } from '../../src/util/unavailable.ts';

/**
 * R-HLT-5: one place decides whose failure an error is. This deployment's (Redis, PostgreSQL,
 * storage, the encryption key, the configuration) is recorded against no account; the platform's
 * answers and what the account's data caused are the account's.
 */
const named = (name: string, message: string, extra: Record<string, unknown> = {}) =>
  Object.assign(Object.defineProperty(new Error(message), 'name', { value: name }), extra);
const connectionError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:6379`), { code });

describe('localFailure: whose failure is it? (R-HLT-5)', () => {
  const local: Array<[string, unknown, { what: string; unreachable: boolean }]> = [
    [
      'Redis unreachable, as a command says it',
      new ServiceUnavailableError('Redis', 'cannot reach Redis at 127.0.0.1:1'),
      { what: 'Redis', unreachable: true },
    ],
    [
      "ioredis's own: the max retries per request",
      named('MaxRetriesPerRequestError', 'Reached the max retries per request limit (which is 3).'),
      { what: 'Redis', unreachable: true },
    ],
    ['ioredis: the connection is closed', new Error('Connection is closed.'), { what: 'Redis', unreachable: true }],
    [
      'Redis refusing a command (OOM)',
      named('ReplyError', 'OOM command not allowed'),
      { what: 'Redis', unreachable: false },
    ],
    [
      'PostgreSQL unreachable',
      new DatabaseUnavailableError('cannot reach PostgreSQL', 'ECONNREFUSED'),
      { what: 'PostgreSQL', unreachable: true },
    ],
    [
      'PostgreSQL shutting down (57P01)',
      named('error', 'terminating connection due to administrator command', { code: '57P01', severity: 'FATAL' }),
      { what: 'PostgreSQL', unreachable: true },
    ],
    [
      'PostgreSQL out of disk (53100)',
      named('error', 'could not extend file', { code: '53100', severity: 'ERROR' }),
      { what: 'PostgreSQL', unreachable: true },
    ],
    [
      'the pg pool lost its connection',
      new Error('Connection terminated unexpectedly'),
      { what: 'PostgreSQL', unreachable: true },
    ],
    [
      'storage unreachable',
      new StorageUnavailableError('S3 bucket s3://b/ is not reachable'),
      { what: 'storage', unreachable: true },
    ],
    ['storage refusing (access denied)', new StorageError('AccessDenied'), { what: 'storage', unreachable: false }],
    [
      'an invalid storage key (ours)',
      new InvalidKeyError('slot', 'x/..', 'bad'),
      { what: 'storage', unreachable: false },
    ],
    [
      'a token no configured key opens',
      new TokenDecryptError('the token of account 1 was encrypted with key abcd1234', 'unknown-key', 'abcd1234'),
      { what: 'encryption key', unreachable: false },
    ],
    [
      'a malformed key',
      new EncryptionKeyError('TOKEN_ENCRYPTION_KEY is not set'),
      { what: 'encryption key', unreachable: false },
    ],
    [
      'the configuration',
      named('ConfigError', 'invalid configuration', { problems: [] }),
      { what: 'configuration', unreachable: false },
    ],
    [
      'a bare connection error of a service of ours',
      connectionError('ECONNREFUSED'),
      { what: 'a service', unreachable: true },
    ],
  ];
  for (const [label, err, expected] of local)
    it(`local: ${label}`, () => {
      expect(localFailure(err)).toEqual(expected);
    });

  const account: Array<[string, unknown]> = [
    ['a rate limit', new RateLimitedError('media list: rate limited', { code: 17 })],
    [
      'the platform unreachable (its own error, whatever the cause)',
      new TransientError('media list: network error', {}),
    ],
    ['a dead token', new TokenInvalidError('token rejected', { code: 190, subcode: 463 })],
    ['a malformed answer', new MalformedResponseError('media list: not JSON', {})],
    ['the image host timing out', new DownloadError('download timed out', undefined, { retryable: true })],
    ['an expired link', new LinkExpiredError('URL signature expired')],
    ['an image too large', new TooLargeError('too large', 10)],
    [
      'the platform unreachable, as doctor says it',
      new ServiceUnavailableError('platform', 'cannot reach the platform'),
    ],
    [
      'a statement failing on what it wrote (23505)',
      named('error', 'duplicate key', { code: '23505', severity: 'ERROR' }),
    ],
    ['a bug met on the account’s data', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['not an Error at all', 'boom'],
  ];
  for (const [label, err] of account)
    it(`the account's: ${label}`, () => {
      expect(localFailure(err)).toBeNull();
    });
});

describe('the CLI line and exit code of a local failure', () => {
  it("ioredis's raw error names Redis and is exit 3 (unavailable)", () => {
    const f = describeFailure(
      named(
        'MaxRetriesPerRequestError',
        'Reached the max retries per request limit (which is 3). Refer to "maxRetriesPerRequest" option for details.',
      ),
    );
    expect(f.unavailable).toBe(true);
    expect(f.message).toBe(
      'Redis failed while the command ran (Reached the max retries per request limit (which is 3).); is it running? check REDIS_URL',
    );
  });

  it('a token no key opens is kind configuration (exit 1), its line as the cipher says it', () => {
    const err = new TokenDecryptError(
      'the token of account 1 was encrypted with key abcd1234',
      'unknown-key',
      'abcd1234',
    );
    const f = describeFailure(err);
    expect(f.unavailable).toBe(false);
    expect(jsonFailureOf(err, f)).toEqual({ kind: 'configuration', message: err.message });
  });
});

describe('errorKind: what each error class says it is', () => {
  const kinds: Array<[unknown, string]> = [
    [new TokenInvalidError('rejected', { code: 190 }), 'token_invalid'],
    [new TokenInvalidError('rejected', { code: 190, subcode: 458 }), 'app_removed'],
    [new TokenInvalidError('rejected', { code: 190, subcode: 459 }), 'checkpoint'],
    [new TokenInvalidError('rejected', { code: 190, subcode: 460 }), 'password_changed'],
    [new TokenExpiredError('expired', { code: 190, subcode: 463 }), 'token_expired'],
    [new TokenInvalidError('rejected', { code: 190, subcode: 999 }), 'token_invalid'],
    [new InsufficientDeveloperRoleError('no role'), 'developer_role'],
    [new PersonalAccountError('personal'), 'personal_account'],
    [new MissingScopeError('no scope'), 'missing_permission'],
    [new RateLimitedError('limited', { code: 4 }), 'rate_limit'],
    [new TokenTooYoungError('too young'), 'token_too_young'],
    [new TransientError('reset'), 'network'],
    [new RunawayListingError('endless', 'repeated-cursor'), 'listing_runaway'],
    [new MalformedResponseError('not JSON'), 'platform'],
    [new PlatformRequestError('bad parameter'), 'platform'],
    [new LinkExpiredError('URL signature expired'), 'link_expired'],
    [new DownloadError('timed out'), 'network'],
    [new TooLargeError('too large', 10), 'bad_item'],
    [new DisallowedHostError('elsewhere'), 'bad_item'],
    [new StorageUnavailableError('down'), 'storage'],
    [new InvalidKeyError('key', '../x', 'traversal'), 'storage'],
    [connectionError('ECONNREFUSED'), 'network'],
    [new DatabaseUnavailableError('cannot reach PostgreSQL', 'ECONNREFUSED'), 'network'],
    [new TypeError('a bug'), 'internal'],
    [named('error', 'has a kind that is not ours', { errorKind: 'nonsense' }), 'internal'],
    ['boom', 'internal'],
    [null, 'internal'],
  ];
  for (const [err, kind] of kinds)
    it(`${err instanceof Error ? `${err.name}: ${err.message}` : String(err)} -> ${kind}`, () => {
      expect(errorKind(err)).toBe(kind);
    });
});
