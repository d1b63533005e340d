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
  it('accepts one base64 key and ids it by its fingerprint (R-KEY-1)', () => {
    const ring = parseKeyring(b64A);
    expect(ring.currentId).toBe(keyFingerprint(keyA));
    expect(ring.currentId).toMatch(/^[0-9a-f]{8}$/);
    expect(ring.keys.get(ring.currentId)?.equals(keyA)).toBe(true);
    expect(ring.entries).toEqual([{ id: ring.currentId, label: null, key: keyA }]);
  });

  it('a key has the same id whatever its label, and the id reveals nothing of the key (R-KEY-1)', () => {
    const bare = parseKeyring(b64A).currentId;
    expect(parseKeyring(`old:${b64A}`).currentId).toBe(bare);
    expect(parseKeyring(`anything:${keyA.toString('hex')}`).currentId).toBe(bare);
    expect(parseKeyring(`new:${hexB},old:${b64A}`).entries.map((e) => [e.id, e.label])).toEqual([
      [keyFingerprint(keyB), 'new'],
      [bare, 'old'],
    ]);
    for (const form of [b64A, keyA.toString('hex'), keyA.toString('base64url')]) expect(form).not.toContain(bare);
  });

  it('accepts one 64-char hex key (hex wins over base64 reading)', () => {
    const ring = parseKeyring(hexB);
    expect(ring.keys.get(ring.currentId)?.equals(keyB)).toBe(true);
  });

  it('accepts label:key lists where the first key encrypts', () => {
    const ring = parseKeyring(`new:${hexB}, old:${b64A}`);
    expect(ring.currentId).toBe(keyFingerprint(keyB));
    expect([...ring.keys.keys()]).toEqual([keyFingerprint(keyB), keyFingerprint(keyA)]);
  });

  it.each([
    [undefined, /TOKEN_ENCRYPTION_KEY is not set/],
    ['', /TOKEN_ENCRYPTION_KEY is not set/],
    [randomBytes(16).toString('base64'), /decodes to 16 bytes, AES-256 needs exactly 32/],
    ['not a key at all!', /neither 64 hex characters nor base64/],
    [`a:${b64A},a:${hexB}`, /key label a appears twice/],
    [`new:${b64A},old:${b64A}`, /entry 2: the same key \(id [0-9a-f]{8}\) is already entry 1/],
    [`ok:${b64A},bad id:${hexB}`, /entry 2: key label must be/],
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

  it('a row that records a legacy label opened by no key under it: auth-failed, naming the key', () => {
    // Versions before derived ids recorded the label: `k1` now names a different key.
    const sealed = { keyId: 'k1', ciphertext: TokenCipher.fromEnv(b64A).encrypt(TOKEN, 'acct-1').ciphertext };
    const e = thrown(() => TokenCipher.fromEnv(`k1:${hexB}`).decrypt(sealed, 'acct-1'));
    expect(e).toBeInstanceOf(TokenDecryptError);
    expect((e as TokenDecryptError).reason).toBe('auth-failed');
    expect(e.message).toContain(`names key ${keyFingerprint(keyB)} (k1)`);
    expect(e.message).not.toContain(TOKEN);
  });

  it('names an unknown key by its id, and the keys it holds by theirs (never the key)', () => {
    const sealed = TokenCipher.fromEnv(`gone:${b64A}`).encrypt(TOKEN, 'acct-1');
    expect(sealed.keyId).toBe(keyFingerprint(keyA));
    const e = thrown(() => TokenCipher.fromEnv(`k2:${hexB}`).decrypt(sealed, 'acct-1'));
    expect((e as TokenDecryptError).reason).toBe('unknown-key');
    expect((e as TokenDecryptError).keyId).toBe(keyFingerprint(keyA));
    expect(e.message).toContain(
      `the token of account acct-1 was encrypted with key ${keyFingerprint(keyA)}, which TOKEN_ENCRYPTION_KEY does not contain (it holds ${keyFingerprint(keyB)} (k2))`,
    );
    expect(e.message).not.toContain(b64A);
    expect(e.message).not.toContain(hexB);
  });

  it('a webhook secret is named as one in errors', () => {
    const sealed = TokenCipher.fromEnv(b64A).encrypt('whsec_x', 'webhook:ep-1');
    expect(thrown(() => TokenCipher.fromEnv(hexB).decrypt(sealed, 'webhook:ep-1')).message).toMatch(
      /^the signing secret of webhook endpoint ep-1 was encrypted with key/,
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
    expect(rotated.encrypt(TOKEN, 'acct-1').keyId).toBe(keyFingerprint(keyB));
    expect(rotated.keyOf(oldSealed, 'acct-1')).toBe(keyFingerprint(keyA));
    expect(rotated.keys()).toEqual([
      { id: keyFingerprint(keyB), label: 'new', primary: true },
      { id: keyFingerprint(keyA), label: 'old', primary: false },
    ]);
  });

  it('the recipe from a bare key: new:<key>,old:<same key> opens what the bare key sealed (R-KEY-1)', () => {
    const sealed = TokenCipher.fromEnv(b64A).encrypt(TOKEN, 'acct-1');
    expect(TokenCipher.fromEnv(`new:${hexB},old:${b64A}`).decrypt(sealed, 'acct-1')).toBe(TOKEN);
    // Renamed again, or listed bare: still the same key.
    expect(TokenCipher.fromEnv(`newer:${hexB},previous:${b64A}`).decrypt(sealed, 'acct-1')).toBe(TOKEN);
  });

  it('a row recording a legacy label is opened by the key material, whatever the key is called now', () => {
    const legacy = { keyId: 'k1', ciphertext: TokenCipher.fromEnv(b64A).encrypt(TOKEN, 'acct-1').ciphertext };
    const cipher = TokenCipher.fromEnv(`new:${hexB},old:${b64A}`);
    expect(cipher.decrypt(legacy, 'acct-1')).toBe(TOKEN);
    expect(cipher.keyOf(legacy, 'acct-1')).toBe(keyFingerprint(keyA));
    expect(TokenCipher.fromEnv(`k1:${b64A}`).hasKey('k1')).toBe(true);
  });
});
