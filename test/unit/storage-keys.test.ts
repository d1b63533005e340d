import { describe, expect, it } from 'vitest';
import { InvalidKeyError } from '../../src/storage/errors.ts';
import {
  assertStorageKey,
  assertStoragePrefix,
  DEPLOYMENT_MARKER_KEY,
  feedKey,
  mediaKey,
  mediaPrefix,
  parseOwnedKey,
  probeKey,
  variantKey,
} from '../../src/storage/keys.ts';
import { parseS3Url } from '../../src/storage/index.ts';

describe('storage keys', () => {
  it('lays out feeds and media', () => {
    expect(feedKey('17841400000000001')).toBe('feeds/17841400000000001.json');
    expect(mediaPrefix('acc_1')).toBe('media/acc_1/');
    expect(mediaPrefix('acc_1', '1790-2')).toBe('media/acc_1/1790-2/');
    expect(mediaKey('acc_1', '1790', 'cover-0123abcd.jpg')).toBe('media/acc_1/1790/cover-0123abcd.jpg');
  });

  it.each(['../etc', '..', 'a/b', 'a\\b', '', 'a b', 'a.b', 'x'.repeat(129), 'é', 'a\0'])(
    'refuses the id %j (no path traversal)',
    (bad) => {
      expect(() => feedKey(bad)).toThrow(InvalidKeyError);
      expect(() => mediaPrefix('acc', bad)).toThrow(InvalidKeyError);
    },
  );

  it("names a resized variant after its original: the original's key without extension, -w<width>, the format's extension", () => {
    const original = 'media/acc_1/1790/cover-0123abcd0123abcd.jpg';
    expect(variantKey(original, 160, 'image/webp')).toBe('media/acc_1/1790/cover-0123abcd0123abcd-w160.webp');
    expect(variantKey(original, 1080, 'image/avif')).toBe('media/acc_1/1790/cover-0123abcd0123abcd-w1080.avif');
    expect(variantKey('media/a/m/slide-2-00ff.png', 240, 'image/webp')).toBe('media/a/m/slide-2-00ff-w240.webp');
    // Only the formats variants are encoded in; only whole positive widths.
    expect(() => variantKey(original, 160, 'image/jpeg')).toThrow(InvalidKeyError);
    expect(() => variantKey(original, 0, 'image/webp')).toThrow(InvalidKeyError);
    expect(() => variantKey(original, 1.5, 'image/webp')).toThrow(InvalidKeyError);
    expect(() => variantKey('../x.jpg', 160, 'image/webp')).toThrow(InvalidKeyError);
  });

  it('names the bad part in the error', () => {
    expect(() => mediaKey('acc', '../../x', 'a.jpg')).toThrow(/mediaId/);
    expect(() => mediaKey('../acc', 'm', 'a.jpg')).toThrow(/accountId/);
    try {
      mediaKey('acc', 'm', '../a.jpg');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidKeyError);
      expect((err as InvalidKeyError).part).toBe('name');
    }
  });

  it.each(['..', '../a', 'a/../b', '.hidden', 'a..jpg', 'a/b', ''])('refuses the name %j', (bad) => {
    expect(() => mediaKey('acc', 'm', bad)).toThrow(InvalidKeyError);
  });

  it('whole keys: relative, safe segments only', () => {
    expect(assertStorageKey('media/a/b/c.webp')).toBe('media/a/b/c.webp');
    for (const bad of ['/abs', 'a//b', 'a/', 'a/../b', './a', 'a/.meta/x', '..', '', 'a\\..\\b']) {
      expect(() => assertStorageKey(bad), bad).toThrow(InvalidKeyError);
    }
  });

  it('prefixes: may end with a slash, never empty for deletion', () => {
    expect(assertStoragePrefix('media/acc/', false)).toBe('media/acc/');
    expect(assertStoragePrefix('media/ac', false)).toBe('media/ac');
    expect(assertStoragePrefix('', true)).toBe('');
    expect(() => assertStoragePrefix('', false)).toThrow(/empty/);
    expect(() => assertStoragePrefix('media/../', true)).toThrow(InvalidKeyError);
  });

  it('R-DEL-2: knows the keys feedmirror writes and may delete, by what they are; nothing else', () => {
    const sha = '0123456789abcdef';
    expect(parseOwnedKey(`media/acc_1/1790/cover-${sha}.jpg`)).toEqual({
      kind: 'media',
      accountId: 'acc_1',
      mediaId: '1790',
      slot: 'cover',
      manifest: false,
    });
    expect(parseOwnedKey(variantKey(`media/acc_1/1790/slide-2-${sha}.png`, 160, 'image/avif'))).toMatchObject({
      kind: 'media',
      slot: 'slide-2',
    });
    expect(parseOwnedKey('media/acc_1/1790/slide-2.json')).toMatchObject({
      kind: 'media',
      slot: 'slide-2',
      manifest: true,
    });
    expect(parseOwnedKey('widgets/w_abcdefghij.json')).toEqual({ kind: 'widget', widgetId: 'w_abcdefghij' });
    expect(parseOwnedKey('widgets/w_abcdefghij.html')).toEqual({ kind: 'widget', widgetId: 'w_abcdefghij' });
    expect(parseOwnedKey('status/acc_1.json')).toEqual({ kind: 'status', accountId: 'acc_1' });
    expect(parseOwnedKey(probeKey('readiness', 'media', 'abcdef012345'))).toEqual({ kind: 'probe' });
    expect(parseOwnedKey(probeKey('doctor', 'feeds', 'abcdef012345'))).toEqual({ kind: 'probe' });
    for (const never of [
      'README.txt',
      'feeds/acc_1.json', // feeds are never deleted
      DEPLOYMENT_MARKER_KEY,
      'widget/feedmirror-widget.js',
      'media/acc_1/README.txt',
      'media/acc_1/1790/README.txt',
      'media/acc_1/1790/cover.jpg', // no content hash: not a name the copy makes
      'media/acc_1/1790/cover-0123abcd.jpg', // 8 hex digits, not 16
      `media/acc_1/1790/cover-${sha}.gif`,
      `media/acc_1/1790/cover-${sha}-w160.jpg`, // variants are WebP or AVIF
      `media/acc_1/1790/cover-${sha}-w0.webp`,
      `media/acc_1/1790/Cover-${sha}.jpg`,
      `media/acc_1/17.90/cover-${sha}.jpg`,
      `media/acc_1/1790/x/cover-${sha}.jpg`,
      `media/acc_1/cover-${sha}.jpg`,
      `other/acc_1/1790/cover-${sha}.jpg`,
      'status/acc_1.html',
      'status/acc_1.json.bak',
      'widgets/w_abcdefghij.txt',
      'feeds/readiness-probe-abcdef012345.json',
      'feeds/readiness-probe-abcdef01234.txt',
    ])
      expect(parseOwnedKey(never), never).toBeNull();
    expect(() => probeKey('readiness', 'feeds', 'not-hex')).toThrow(InvalidKeyError);
  });

  it('parses STORAGE_URL s3://bucket/prefix', () => {
    expect(parseS3Url('s3://my-bucket')).toEqual({ bucket: 'my-bucket', prefix: '' });
    expect(parseS3Url('s3://my-bucket/feedmirror/prod/')).toEqual({ bucket: 'my-bucket', prefix: 'feedmirror/prod/' });
    expect(() => parseS3Url('s3://B')).toThrow(/bucket/);
    expect(() => parseS3Url('s3://bucket/../x')).toThrow(/prefix/);
  });
});
