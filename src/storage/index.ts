import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.ts';
import { StorageError } from './errors.ts';
import { LocalStorage } from './local.ts';
import { S3Storage, type S3Credentials } from './s3.ts';
import type { ObjectStorage } from './types.ts';

export type { ListedObject, ListObjectsOptions, ObjectStorage, PutOptions, StoredObject } from './types.ts';
export { StorageError, StorageUnavailableError, InvalidKeyError } from './errors.ts';
export { feedKey, mediaKey, mediaPrefix, widgetDocumentKey, widgetFragmentKey } from './keys.ts';
export { LocalStorage } from './local.ts';
export { S3Storage } from './s3.ts';

export interface StorageDeps {
  /** Explicit S3 credentials (tests against s3rver); production uses the SDK's default chain. */
  credentials?: S3Credentials;
  /** SDK attempts per S3 request, first try included (default 3). */
  maxAttempts?: number;
  /** Per-request timeout for S3 (default 30 s). */
  requestTimeoutMs?: number;
  /** Folder a relative local STORAGE_URL is resolved against (default process.cwd()). */
  cwd?: string;
}

type StorageConfig = Pick<
  Config,
  'STORAGE_URL' | 'S3_ENDPOINT' | 'S3_REGION' | 'S3_FORCE_PATH_STYLE' | 'S3_CHECKSUMS' | 'MEDIA_PUBLIC_URL'
>;

/** `s3://bucket/prefix` => { bucket, prefix ('' or ending with '/') }. */
export function parseS3Url(url: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  const bucket = m?.[1];
  // S3 bucket naming rules (lowercase, digits, dots, hyphens, 3-63).
  if (!m || !bucket || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new StorageError(
      `STORAGE_URL must look like s3://bucket/optional/prefix with a valid bucket name, got ${JSON.stringify(url)}`,
    );
  }
  const rest = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (rest && !rest.split('/').every((s) => /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/.test(s) && !s.includes('..'))) {
    throw new StorageError(
      `STORAGE_URL prefix ${JSON.stringify(rest)} has a segment that is not allowed (A-Z a-z 0-9 _ . -)`,
    );
  }
  return { bucket, prefix: rest ? `${rest}/` : '' };
}

/** STORAGE_URL `s3://bucket/prefix` => S3; anything else => a local folder (resolved against cwd). */
export function createStorage(config: StorageConfig, deps: StorageDeps = {}): ObjectStorage {
  if (config.STORAGE_URL.startsWith('s3://')) {
    const { bucket, prefix } = parseS3Url(config.STORAGE_URL);
    return new S3Storage({
      bucket,
      prefix,
      region: config.S3_REGION,
      ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      checksums: config.S3_CHECKSUMS,
      ...(config.MEDIA_PUBLIC_URL ? { mediaPublicUrl: config.MEDIA_PUBLIC_URL } : {}),
      ...(deps.credentials ? { credentials: deps.credentials } : {}),
      maxAttempts: deps.maxAttempts ?? 3,
      requestTimeoutMs: deps.requestTimeoutMs ?? 30_000,
    });
  }
  const folder = config.STORAGE_URL.startsWith('file://') ? fileURLToPath(config.STORAGE_URL) : config.STORAGE_URL;
  return new LocalStorage(path.resolve(deps.cwd ?? process.cwd(), folder), config.MEDIA_PUBLIC_URL);
}
