import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TokenCipher, keyFingerprint, parseKeyring } from '../../src/store/crypto.ts';
import { EncryptionKeyError, TokenDecryptError } from '../../src/store/errors.ts';

const keyA = randomBytes(32);
const keyB = randomBytes(32);
const b64A = keyA.toString('base64');
const hexB = keyB.toString('hex');
const TOKEN = 'IGAAT0kenValue.with-odd_chars/123==';

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

describe('parseKeyring', () => {
  it('accepts one base64 key and ids it by its fingerprint', () => {
    const ring = parseKeyring(b64A);
    expect(ring.currentId).toBe(keyFingerprint(keyA));
    expect(ring.currentId).toMatch(/^[0-9a-f]{8}$/);
    expect(ring.keys.get(ring.currentId)?.equals(keyA)).toBe(true);
  });

  it('accepts one 64-char hex key (hex wins over base64 reading)', () => {
    const ring = parseKeyring(hexB);
    expect(ring.keys.get(ring.currentId)?.equals(keyB)).toBe(true);
  });

  it('accepts id:key lists where the first key encrypts', () => {
    const ring = parseKeyring(`new:${hexB}, old:${b64A}`);
    expect(ring.currentId).toBe('new');
    expect([...ring.keys.keys()]).toEqual(['new', 'old']);
  });

  it.each([
    [undefined, /TOKEN_ENCRYPTION_KEY is not set/],
    ['', /TOKEN_ENCRYPTION_KEY is not set/],
    [randomBytes(16).toString('base64'), /decodes to 16 bytes, AES-256 needs exactly 32/],
    ['not a key at all!', /neither 64 hex characters nor base64/],
    [`a:${b64A},a:${hexB}`, /key id a appears twice/],
    [`ok:${b64A},bad id:${hexB}`, /entry 2: key id must be/],
    [`${b64A},`, /entry 2 is empty/],
  ])('refuses %s with a clear message naming the variable, never the key', (value, message) => {
    const e = thrown(() => parseKeyring(value));
    expect(e).toBeInstanceOf(EncryptionKeyError);
    expect(e.message).toMatch(message);
    expect(e.message).toContain('TOKEN_ENCRYPTION_KEY');
    if (value) {
      for (const part of value.split(/[,:]/).filter((p) => p.length > 8)) expect(e.message).not.toContain(part);
    }
  });
});

describe('TokenCipher', () => {
  const cipher = TokenCipher.fromEnv(b64A);

  it('round-trips a token and never stores it in clear', () => {
    const sealed = cipher.encrypt(TOKEN, 'acct-1');
    expect(sealed.keyId).toBe(cipher.currentKeyId);
    expect(sealed.ciphertext.includes(Buffer.from(TOKEN))).toBe(false);
    expect(cipher.decrypt(sealed, 'acct-1')).toBe(TOKEN);
  });

  it('uses a fresh IV each time (same token, different ciphertext)', () => {
    const a = cipher.encrypt(TOKEN, 'acct-1').ciphertext;
    const b = cipher.encrypt(TOKEN, 'acct-1').ciphertext;
    expect(a.equals(b)).toBe(false);
  });

  it('refuses a wrong key under the same id', () => {
    const sealed = TokenCipher.fromEnv(`k1:${b64A}`).encrypt(TOKEN, 'acct-1');
    const e = thrown(() => TokenCipher.fromEnv(`k1:${hexB}`).decrypt(sealed, 'acct-1'));
    expect(e).toBeInstanceOf(TokenDecryptError);
    expect((e as TokenDecryptError).reason).toBe('auth-failed');
    expect(e.message).toContain('wrong key for k1');
    expect(e.message).not.toContain(TOKEN);
  });

  it('names an unknown key id', () => {
    const sealed = TokenCipher.fromEnv(`gone:${b64A}`).encrypt(TOKEN, 'acct-1');
    const e = thrown(() => TokenCipher.fromEnv(`k2:${hexB}`).decrypt(sealed, 'acct-1'));
    expect((e as TokenDecryptError).reason).toBe('unknown-key');
    expect(e.message).toContain(
      'token of account acct-1 was encrypted with key gone, which TOKEN_ENCRYPTION_KEY does not contain',
    );
  });

  it('binds the ciphertext to its account (AAD): a row moved to another account fails', () => {
    const sealed = cipher.encrypt(TOKEN, 'acct-1');
    const e = thrown(() => cipher.decrypt(sealed, 'acct-2'));
    expect((e as TokenDecryptError).reason).toBe('auth-failed');
  });

  it('detects tampering', () => {
    const sealed = cipher.encrypt(TOKEN, 'acct-1');
    sealed.ciphertext[sealed.ciphertext.length - 1]! ^= 1;
    expect(() => cipher.decrypt(sealed, 'acct-1')).toThrow(TokenDecryptError);
  });

  it('rotation: the new first key encrypts, the old one still decrypts', () => {
    const oldSealed = TokenCipher.fromEnv(`old:${b64A}`).encrypt(TOKEN, 'acct-1');
    const rotated = TokenCipher.fromEnv(`new:${hexB},old:${b64A}`);
    expect(rotated.decrypt(oldSealed, 'acct-1')).toBe(TOKEN);
    expect(rotated.encrypt(TOKEN, 'acct-1').keyId).toBe('new');
  });
});
