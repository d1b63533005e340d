import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The dashboard's keys and signatures (HMAC-SHA256): the signing key itself, signed values (the
 * flash message), and the credentials' digests. CSRF tokens are signed with the same key
 * (../csrf.ts).
 */

/**
 * The secret the dashboard's signing key is derived from: SESSION_SECRET when set, else derived
 * from TOKEN_ENCRYPTION_KEY with HKDF under a label of its own, so no key ever serves two
 * purposes (the token cipher uses the key itself, never this).
 */
export function deriveSessionSecret(
  sessionSecret: string | undefined,
  tokenEncryptionKey: string | undefined,
): string | undefined {
  if (sessionSecret) return sessionSecret;
  if (!tokenEncryptionKey) return undefined;
  return Buffer.from(
    hkdfSync(
      'sha256',
      Buffer.from(tokenEncryptionKey, 'utf8'),
      Buffer.alloc(0),
      'feedmirror dashboard session secret v1',
      32,
    ),
  ).toString('base64url');
}

/** The signing key of one deployment (every replica with the same secret derives the same); random without one. */
export function signingKey(secret: string | undefined): Buffer {
  const material = secret ? Buffer.from(secret) : randomBytes(32);
  return createHmac('sha256', material).update('feedmirror dashboard signing v2').digest();
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');

/** A random value for a cookie (the login form's nonce). */
export function randomNonce(): string {
  return b64(randomBytes(18));
}

function mac(key: Buffer, purpose: string, payload: string): Buffer {
  return createHmac('sha256', key).update(`${purpose}\0${payload}`).digest();
}

/** `payload.signature`, both base64url; the purpose keeps a flash cookie from passing as a session. */
export function signValue(key: Buffer, purpose: string, value: unknown): string {
  const payload = b64(JSON.stringify(value));
  return `${payload}.${b64(mac(key, purpose, payload))}`;
}

export function verifyValue(key: Buffer, purpose: string, signed: string | undefined): unknown {
  if (!signed) return undefined;
  const [payload, sig, extra] = signed.split('.');
  if (!payload || !sig || extra !== undefined) return undefined;
  const expected = mac(key, purpose, payload);
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A check of a user name and password against the configured ones: fixed-length digests compared
 * in constant time, both compared every time (no early exit that would tell whether the user
 * name was right). Never true when no user is configured.
 */
export function credentialsChecker(
  key: Buffer,
  expected: { user: string; password: string; configured: boolean },
): (user: string, password: string) => boolean {
  const digest = (v: string) => createHmac('sha256', key).update(v).digest();
  const expectedUser = digest(expected.user);
  const expectedPassword = digest(expected.password);
  return (u, p) => {
    const userOk = timingSafeEqual(digest(u), expectedUser);
    const passwordOk = timingSafeEqual(digest(p), expectedPassword);
    return expected.configured && userOk && passwordOk;
  };
}

/** Fingerprint of the configured credentials, kept in each session: a password change ends them all. */
export function credentialsFingerprint(key: Buffer, user: string, password: string): string {
  return createHmac('sha256', key).update(`credentials\0${user}\0${password}`).digest('base64url').slice(0, 22);
}
