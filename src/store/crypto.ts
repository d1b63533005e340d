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

export interface KeyEntry {
  /**
   * The key's id: a digest of its material (keyFingerprint), the same whatever the operator calls
   * the key, so it is what every sealed secret records (R-KEY-1).
   */
  id: string;
  /** The name the operator gave it (`new:<key>`), or null for a key given bare. */
  label: string | null;
  key: Buffer;
}

export interface Keyring {
  /** The id of the key that encrypts: the first one listed. */
  currentId: string;
  /** Every key that may decrypt, by id, in the order TOKEN_ENCRYPTION_KEY lists them. */
  keys: ReadonlyMap<string, Buffer>;
  /** The same keys with their labels, in order. */
  entries: readonly KeyEntry[];
}

export interface SealedToken {
  keyId: string;
  ciphertext: Buffer;
}

/**
 * A key's id: the first 8 hex chars of sha256(key). 32 bits of a digest of 256 random bits: it
 * tells keys apart and says nothing about the key.
 */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/**
 * Parse TOKEN_ENCRYPTION_KEY: one 32-byte key (64 hex chars or base64), or a comma-separated list
 * of keys, each bare or labelled `label:key`. The first key encrypts; all decrypt, which is how keys
 * rotate. Every key's id is derived from its material (R-KEY-1): a label is a name for people and
 * never decides which key opens a secret, so `feedmirror init`'s bare key and the same key later
 * listed as `old:<key>` are one key with one id. Errors name the variable, the entry and the id,
 * never the key.
 */
export function parseKeyring(value: string | undefined): Keyring {
  if (value === undefined || value.trim() === '') {
    throw new EncryptionKeyError(
      `${VAR} is not set: tokens are stored encrypted and need a 32-byte key (generate one with: openssl rand -base64 32)`,
    );
  }
  registerSecret(value);
  const parts = value.split(',').map((e) => e.trim());
  const entries: KeyEntry[] = [];
  parts.forEach((entry, index) => {
    const where = parts.length > 1 ? `${VAR} entry ${index + 1}` : VAR;
    if (entry === '') throw new EncryptionKeyError(`${where} is empty (stray comma?)`);
    const colon = entry.indexOf(':');
    const label = colon === -1 ? null : entry.slice(0, colon).trim();
    const material = (colon === -1 ? entry : entry.slice(colon + 1)).trim();
    registerSecret(material);
    if (label !== null && !ID_RE.test(label)) {
      throw new EncryptionKeyError(
        `${where}: key label must be 1-32 letters, digits, '.', '_' or '-' (format label:key,label:key)`,
      );
    }
    const key = decodeKey(material, where);
    const id = keyFingerprint(key);
    const same = entries.findIndex((e) => e.id === id);
    if (same !== -1) {
      throw new EncryptionKeyError(`${where}: the same key (id ${id}) is already entry ${same + 1}; list it once`);
    }
    if (label !== null && entries.some((e) => e.label === label)) {
      throw new EncryptionKeyError(`${where}: key label ${label} appears twice`);
    }
    entries.push({ id, label, key });
  });
  return { currentId: entries[0]!.id, keys: new Map(entries.map((e) => [e.id, e.key])), entries };
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

function aad(binding: string): Buffer {
  return Buffer.from(`feedmirror:token:v1:${binding}`, 'utf8');
}

/** What a sealed secret is, in words: the binding is an account id, `webhook:<endpoint id>` or `app:<name>`. */
export function describeSecret(binding: string): string {
  if (binding.startsWith('webhook:'))
    return `the signing secret of webhook endpoint ${binding.slice('webhook:'.length)}`;
  if (binding.startsWith('app:')) return `the secret of app ${binding.slice('app:'.length)}`;
  return `the token of account ${binding}`;
}

/** A key as operators see it: its id, and its label when it has one (`1a2b3c4d (new)`). */
export function describeKeyEntry(entry: Pick<KeyEntry, 'id' | 'label'>): string {
  return entry.label ? `${entry.id} (${entry.label})` : entry.id;
}

export interface KeyInfo {
  id: string;
  label: string | null;
  /** The first key: it encrypts everything sealed from now on. */
  primary: boolean;
}

export class TokenCipher {
  constructor(private readonly keyring: Keyring) {}

  /** From the environment's TOKEN_ENCRYPTION_KEY (or a given value). */
  static fromEnv(value: string | undefined): TokenCipher {
    return new TokenCipher(parseKeyring(value));
  }

  /** The id every secret sealed now records: the first key's. */
  get currentKeyId(): string {
    return this.keyring.currentId;
  }

  /** The configured keys, primary first. */
  keys(): KeyInfo[] {
    return this.keyring.entries.map((e, i) => ({ id: e.id, label: e.label, primary: i === 0 }));
  }

  /** A stored key id (or a label that older versions recorded) names a configured key. */
  hasKey(keyId: string): boolean {
    return this.named(keyId) !== undefined;
  }

  /** `1a2b3c4d (new)` for a configured key; the stored id as it is otherwise. */
  describeKey(keyId: string): string {
    const entry = this.named(keyId);
    return entry ? describeKeyEntry(entry) : keyId;
  }

  private named(keyId: string): KeyEntry | undefined {
    // By id first; then by label, which is what versions before derived ids recorded for `label:key`.
    return this.keyring.entries.find((e) => e.id === keyId) ?? this.keyring.entries.find((e) => e.label === keyId);
  }

  /** Encrypt with the current key, bound to accountId (or another binding such as `webhook:<id>`). */
  encrypt(plaintext: string, accountId: string): SealedToken {
    const key = this.keyring.keys.get(this.keyring.currentId)!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(accountId));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { keyId: this.keyring.currentId, ciphertext: Buffer.concat([iv, cipher.getAuthTag(), body]) };
  }

  /** The id of the configured key that opens this secret, or null when none does. */
  keyOf(sealed: SealedToken, accountId: string): string | null {
    try {
      return this.open(sealed, accountId).id;
    } catch {
      return null;
    }
  }

  decrypt(sealed: SealedToken, accountId: string): string {
    return this.open(sealed, accountId).plaintext;
  }

  /**
   * Open a sealed secret. The key its id (or legacy label) names is tried first; then every other
   * configured key, since AES-GCM authenticates: only the right key (and the right binding) opens
   * it, so a secret is found by its key's material whatever the key is called now (R-KEY-1).
   */
  private open(sealed: SealedToken, accountId: string): { id: string; plaintext: string } {
    const what = describeSecret(accountId);
    const c = sealed.ciphertext;
    if (c.length < IV_BYTES + TAG_BYTES) {
      throw new TokenDecryptError(
        `stored ${what.replace(/^the /, '')} is truncated (${c.length} bytes)`,
        'malformed',
        sealed.keyId,
      );
    }
    const named = this.named(sealed.keyId);
    const order = named ? [named, ...this.keyring.entries.filter((e) => e !== named)] : this.keyring.entries;
    for (const entry of order) {
      const plaintext = tryOpen(entry.key, c, accountId);
      if (plaintext !== null) return { id: entry.id, plaintext };
    }
    const held = this.keyring.entries.map(describeKeyEntry).join(', ');
    if (!named) {
      throw new TokenDecryptError(
        `${what} was encrypted with key ${sealed.keyId}, which ${VAR} does not contain (it holds ${held}); add that key back after the first one, then run \`feedmirror keys rotate\``,
        'unknown-key',
        sealed.keyId,
      );
    }
    throw new TokenDecryptError(
      `cannot decrypt ${what}: no key of ${VAR} (${held}) opens it, though it names key ${describeKeyEntry(named)}; the row was altered or belongs to another account`,
      'auth-failed',
      sealed.keyId,
    );
  }
}

function tryOpen(key: Buffer, c: Buffer, binding: string): string | null {
  const decipher = createDecipheriv('aes-256-gcm', key, c.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAAD(aad(binding));
  decipher.setAuthTag(c.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(c.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
