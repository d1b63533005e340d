/**
 * Typed errors of the store. Messages say what happened and what the operator should do; none
 * carries a password, a token or an encryption key.
 */

/** PostgreSQL cannot be reached or refuses us (down, wrong host, missing database, bad login). */
export class DatabaseUnavailableError extends Error {
  override readonly name = 'DatabaseUnavailableError';
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
}

/** A stored token cannot be decrypted: unknown key id, wrong key, or a tampered/moved row. */
export class TokenDecryptError extends Error {
  override readonly name = 'TokenDecryptError';
  constructor(
    message: string,
    readonly reason: 'unknown-key' | 'auth-failed' | 'malformed',
    readonly keyId: string,
  ) {
    super(message);
  }
}

/**
 * SQLSTATE classes that say PostgreSQL itself cannot do the work now, whatever the statement:
 * connection exception (08), invalid authorization (28), no such database (3D), insufficient
 * resources (53: disk full, too many connections), operator intervention (57: shutdown, starting
 * up), system error (58), transaction rollback (40: serialization failure, deadlock), and a
 * read-only transaction (25006, a replica). Any other code (a constraint, a data exception) is
 * about what the statement wrote, not about the database being there.
 */
const UNAVAILABLE_SQLSTATE = /^(08|28|3D|53|57|58|40)|^25006$/;
/** Errors of the pg driver and pool that carry no SQLSTATE: the connection went away or never came. */
const DRIVER_CONNECTION =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end|Client was closed and is not queryable/i;

/**
 * Whether an error is PostgreSQL failing us (unreachable, refusing, out of resources), as opposed
 * to a statement failing on what it wrote: the first is this deployment's problem, never an
 * account's (src/accounts/error-kind.ts localFailure).
 */
export function isDatabaseFailure(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError || err instanceof MigrationError) return true;
  if (!(err instanceof Error)) return false;
  const e = err as Error & { code?: unknown; severity?: unknown };
  // pg's DatabaseError: a five-character SQLSTATE and a severity.
  if (typeof e.code === 'string' && typeof e.severity === 'string' && /^[0-9A-Z]{5}$/.test(e.code))
    return UNAVAILABLE_SQLSTATE.test(e.code);
  return DRIVER_CONNECTION.test(e.message);
}
