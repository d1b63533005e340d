import type { LocalFailure } from '../util/error-kinds.ts';

/**
 * Typed errors of the store. Messages say what happened and what the operator should do; none
 * carries a password, a token or an encryption key. Each is this deployment's failure, never an
 * account's (R-HLT-5, src/util/error-kinds.ts localFailure).
 */

/** PostgreSQL cannot be reached or refuses us (down, wrong host, missing database, bad login). */
export class DatabaseUnavailableError extends Error {
  override readonly name = 'DatabaseUnavailableError';
  readonly localFailure: LocalFailure = { what: 'PostgreSQL', unreachable: true };
  constructor(
    message: string,
    /** The driver's code: ECONNREFUSED, ENOTFOUND, 3D000, 28P01, ... */
    readonly code: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Base class of migration refusals. */
export class MigrationError extends Error {
  override name = 'MigrationError';
  readonly localFailure: LocalFailure = { what: 'PostgreSQL', unreachable: true };
}

/**
 * The database has a migration this code does not know and that does not declare this code able to
 * run on it: an older feedmirror against a schema a newer one changed beyond what it can use.
 */
export class DatabaseNewerError extends MigrationError {
  override name = 'DatabaseNewerError';
  constructor(readonly unknown: string[]) {
    super(
      `database is newer than this feedmirror: migration ${unknown.join(', ')} ${unknown.length > 1 ? 'are' : 'is'} applied but unknown to this release, which cannot run on it; run the release that applied it, or restore the database backup taken before that upgrade (docs/production.md, Rolling back)`,
    );
  }
}

/** An applied migration file was edited afterwards: its recorded checksum differs. */
export class MigrationChecksumError extends MigrationError {
  override name = 'MigrationChecksumError';
  constructor(readonly migration: string) {
    super(
      `migration ${migration} was changed after it was applied (checksum differs); restore the original file and put the change in a new migration`,
    );
  }
}

/** TOKEN_ENCRYPTION_KEY is missing or malformed. Never carries the key itself. */
export class EncryptionKeyError extends Error {
  override readonly name = 'EncryptionKeyError';
  readonly localFailure: LocalFailure = { what: 'encryption key', unreachable: false };
}

/** A stored token cannot be decrypted: unknown key id, wrong key, or a tampered/moved row. */
export class TokenDecryptError extends Error {
  override readonly name = 'TokenDecryptError';
  readonly localFailure: LocalFailure = { what: 'encryption key', unreachable: false };
  constructor(
    message: string,
    readonly reason: 'unknown-key' | 'auth-failed' | 'malformed',
    readonly keyId: string,
  ) {
    super(message);
  }
}
