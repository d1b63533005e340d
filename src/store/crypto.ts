import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { registerSecret } from '../util/redact.ts';
import { EncryptionKeyError, TokenDecryptError } from './errors.ts';

/**
 * Tokens at rest: AES-256-GCM with a random 12-byte IV and a 16-byte tag, stored as
 * iv | tag | ciphertext. The account id is the GCM additional data, so a ciphertext copied onto
 * another account's row fails authentication instead of handing one account another's token.
 */

const VAR = 'TOKEN_ENCRYPTION_KEY';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const ID_RE = /^[A-Za-z0-9_.-]{1,32}$/;

export interface Keyring {
  /** The key that encrypts: the first one listed. */
  currentId: string;
  /** Every key that may decrypt, by id. */
  keys: ReadonlyMap<string, Buffer>;
}

export interface SealedToken {
  keyId: string;
  ciphertext: Buffer;
}

/** A short, stable id for a key given without one: the first 8 hex chars of sha256(key). */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/**
 * Parse TOKEN_ENCRYPTION_KEY: one 32-byte key (64 hex chars or base64), or a comma-separated list
 * of `id:key` (or bare keys, which get their fingerprint as id). The first key encrypts; all
 * decrypt, which is how keys rotate. Errors name the variable and the entry, never the key.
 */
export function parseKeyring(value: string | undefined): Keyring {
  if (value === undefined || value.trim() === '') {
    throw new EncryptionKeyError(
      `${VAR} is not set: tokens are stored encrypted and need a 32-byte key (generate one with: openssl rand -base64 32)`,
    );
  }
  registerSecret(value);
  const entries = value.split(',').map((e) => e.trim());
  const keys = new Map<string, Buffer>();
  let currentId: string | undefined;
  entries.forEach((entry, index) => {
    const where = entries.length > 1 ? `${VAR} entry ${index + 1}` : VAR;
    if (entry === '') throw new EncryptionKeyError(`${where} is empty (stray comma?)`);
    const colon = entry.indexOf(':');
    const id = colon === -1 ? undefined : entry.slice(0, colon).trim();
    const material = (colon === -1 ? entry : entry.slice(colon + 1)).trim();
    registerSecret(material);
    if (id !== undefined && !ID_RE.test(id)) {
      throw new EncryptionKeyError(
        `${where}: key id must be 1-32 letters, digits, '.', '_' or '-' (format id:key,id:key)`,
      );
    }
    const key = decodeKey(material, where);
    const keyId = id ?? keyFingerprint(key);
    if (keys.has(keyId)) throw new EncryptionKeyError(`${where}: key id ${keyId} appears twice`);
    keys.set(keyId, key);
    currentId ??= keyId;
  });
  return { currentId: currentId!, keys };
}

function decodeKey(material: string, where: string): Buffer {
  if (material === '') throw new EncryptionKeyError(`${where}: the key is empty`);
  // Hex first: 64 hex chars are also valid base64 (of 48 bytes), so the order matters.
  if (/^[0-9a-fA-F]+$/.test(material) && material.length === 64) return Buffer.from(material, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(material)) {
    const key = Buffer.from(material, material.includes('-') || material.includes('_') ? 'base64url' : 'base64');
    if (key.length === 32) return key;
    throw new EncryptionKeyError(
      `${where}: the key decodes to ${key.length} bytes, AES-256 needs exactly 32 (64 hex chars or 44 base64 chars; openssl rand -base64 32)`,
    );
  }
  throw new EncryptionKeyError(`${where}: the key is neither 64 hex characters nor base64 of 32 bytes`);
}

function aad(accountId: string): Buffer {
  return Buffer.from(`feedmirror:token:v1:${accountId}`, 'utf8');
}

export class TokenCipher {
  constructor(private readonly keyring: Keyring) {}

  /** From the environment's TOKEN_ENCRYPTION_KEY (or a given value). */
  static fromEnv(value: string | undefined): TokenCipher {
    return new TokenCipher(parseKeyring(value));
  }

  get currentKeyId(): string {
    return this.keyring.currentId;
  }

  hasKey(keyId: string): boolean {
    return this.keyring.keys.has(keyId);
  }

  /** Encrypt with the current key, bound to accountId. */
  encrypt(plaintext: string, accountId: string): SealedToken {
    const key = this.keyring.keys.get(this.keyring.currentId)!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(accountId));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { keyId: this.keyring.currentId, ciphertext: Buffer.concat([iv, cipher.getAuthTag(), body]) };
  }

  decrypt(sealed: SealedToken, accountId: string): string {
    const key = this.keyring.keys.get(sealed.keyId);
    if (!key) {
      throw new TokenDecryptError(
        `token of account ${accountId} was encrypted with key ${sealed.keyId}, which ${VAR} does not contain; add that key back (as ${sealed.keyId}:<key>) after the current one`,
        'unknown-key',
        sealed.keyId,
      );
    }
    const c = sealed.ciphertext;
    if (c.length < IV_BYTES + TAG_BYTES) {
      throw new TokenDecryptError(
        `stored token of account ${accountId} is truncated (${c.length} bytes)`,
        'malformed',
        sealed.keyId,
      );
    }
    const decipher = createDecipheriv('aes-256-gcm', key, c.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(accountId));
    decipher.setAuthTag(c.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(c.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new TokenDecryptError(
        `cannot decrypt the token of account ${accountId}: wrong key for ${sealed.keyId} (${VAR} holds a different key under that id), or the row was altered or belongs to another account`,
        'auth-failed',
        sealed.keyId,
      );
    }
  }
}
