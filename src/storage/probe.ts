import { randomBytes } from 'node:crypto';
import { StorageError } from './errors.ts';
import { probeKey } from './keys.ts';
import type { ObjectStorage } from './types.ts';

/**
 * R-NET-5: whether storage takes writes where feedmirror writes, proven by doing it: a small
 * object is written under the prefix, read back byte for byte and deleted. Checking the folder's
 * permission bits said yes as root (root passes every access check) and never looked below the
 * root, so an immutable feeds/ folder (EPERM on every publish) was "ready".
 *
 * The probe's name can never be an object of ours: feeds are feeds/<id>.json, copies sit three
 * levels down (media/<account>/<media>/<name>), the widget script has its own fixed name. Each
 * probe has its own random name, so replicas probing at once never read each other's bytes.
 */
export const WRITTEN_PREFIXES = ['feeds', 'media', 'widget'] as const;
export type WrittenPrefix = (typeof WRITTEN_PREFIXES)[number];

export type ProbeStorage = Pick<ObjectStorage, 'put' | 'get' | 'delete'>;

/**
 * Write, read back, and delete through `remove` (the deletion guard's removeProbe, which deletes
 * only a probe still holding the bytes written: R-DEL-2).
 */
export async function probeWritable(
  storage: ProbeStorage,
  prefix: WrittenPrefix,
  remove: (key: string, body: Buffer) => Promise<unknown>,
): Promise<void> {
  const key = probeKey('readiness', prefix, randomBytes(6).toString('hex'));
  const body = randomBytes(32);
  await storage.put(key, body, { contentType: 'application/octet-stream', cacheControl: 'no-store' });
  let readBack: Buffer | undefined;
  try {
    readBack = (await storage.get(key))?.body;
  } finally {
    await remove(key, body);
  }
  if (!readBack || !readBack.equals(body))
    throw Object.assign(
      new StorageError(`the readiness probe ${key} ${readBack ? 'read back other bytes' : 'was gone when read back'}`),
      { code: 'READBACK_MISMATCH' },
    );
}
