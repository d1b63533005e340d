import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { redactText } from '../util/redact.ts';
import { StorageError, StorageUnavailableError } from './errors.ts';
import { assertStorageKey, assertStoragePrefix } from './keys.ts';
import { joinPublicUrl } from './public-url.ts';
import type { ObjectStorage, PutOptions, StoredObject } from './types.ts';

export interface S3StorageOptions {
  bucket: string;
  /** Key prefix inside the bucket (`s3://bucket/<prefix>`), '' or ending with '/'. */
  prefix: string;
  region: string;
  endpoint?: string;
  forcePathStyle: boolean;
  /** S3_CHECKSUMS: 'when_required' keeps S3-compatible servers from storing aws-chunked framing. */
  checksums: 'when_supported' | 'when_required';
  mediaPublicUrl?: string;
  /** Explicit credentials (tests); otherwise the SDK's default provider chain (env, profile, IMDS...). */
  credentials?: S3Credentials;
  /** Bounded SDK attempts per request (first try included). */
  maxAttempts: number;
  requestTimeoutMs: number;
}

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

interface SdkError {
  name?: string;
  message?: string;
  code?: string;
  $fault?: 'client' | 'server';
  $metadata?: { httpStatusCode?: number };
}

/**
 * S3 (or S3-compatible) object storage. Bodies are always Buffers: a streamed body is stored by
 * some S3-compatible servers with its aws-chunked framing (ENVIRONMENT.md). put is one PutObject,
 * atomic by S3 semantics.
 */
export class S3Storage implements ObjectStorage {
  readonly kind = 's3' as const;
  readonly client: S3Client;
  private readonly where: string;

  constructor(private readonly opts: S3StorageOptions) {
    const mode = opts.checksums === 'when_required' ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED';
    this.client = new S3Client({
      region: opts.region,
      ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
      forcePathStyle: opts.forcePathStyle,
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
      requestChecksumCalculation: mode,
      responseChecksumValidation: mode,
      maxAttempts: opts.maxAttempts,
      requestHandler: { requestTimeout: opts.requestTimeoutMs, connectionTimeout: Math.min(opts.requestTimeoutMs, 10_000) },
    });
    this.where = `s3://${opts.bucket}/${opts.prefix} at ${opts.endpoint ?? `AWS ${opts.region}`}`;
  }

  private full(key: string): string {
    return this.opts.prefix + assertStorageKey(key);
  }

  /** Network errors and 5xx are retryable (StorageUnavailableError); the rest need the operator. */
  private fail(op: string, key: string, err: unknown): never {
    const e = (err ?? {}) as SdkError;
    const status = e.$metadata?.httpStatusCode;
    // Never the SDK's full message verbatim: it could echo a request URL; names and codes suffice.
    const detail = redactText(`${e.name ?? 'Error'}${e.code && e.code !== e.name ? ` ${e.code}` : ''}${status ? ` HTTP ${status}` : ''}: ${(e.message ?? '').slice(0, 200)}`);
    const msg = `S3 ${op} of ${JSON.stringify(key)} on ${this.where} failed (${detail})`;
    const unavailable = status === undefined || status >= 500 || e.$fault === 'server' || e.name === 'TimeoutError';
    throw unavailable ? new StorageUnavailableError(msg, { cause: err }) : new StorageError(msg, { cause: err });
  }

  private isNotFound(err: unknown): boolean {
    const e = err as SdkError;
    return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
  }

  async put(key: string, body: Buffer, opts: PutOptions): Promise<void> {
    const Key = this.full(key);
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.opts.bucket, Key, Body: body, ContentLength: body.length, ContentType: opts.contentType, CacheControl: opts.cacheControl }),
      );
    } catch (err) {
      this.fail('put', key, err);
    }
  }

  async get(key: string): Promise<StoredObject | null> {
    const Key = this.full(key);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key }));
      const bytes = out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
      return {
        body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        ...(out.ContentType ? { contentType: out.ContentType } : {}),
        ...(out.CacheControl ? { cacheControl: out.CacheControl } : {}),
      };
    } catch (err) {
      if (this.isNotFound(err)) return null;
      this.fail('get', key, err);
    }
  }

  async head(key: string): Promise<{ size: number; contentType?: string } | null> {
    const Key = this.full(key);
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key }));
      return { size: out.ContentLength ?? 0, ...(out.ContentType ? { contentType: out.ContentType } : {}) };
    } catch (err) {
      if (this.isNotFound(err)) return null;
      this.fail('head', key, err);
    }
  }

  async delete(key: string): Promise<void> {
    const Key = this.full(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key }));
    } catch (err) {
      if (this.isNotFound(err)) return;
      this.fail('delete', key, err);
    }
  }

  async deletePrefix(prefix: string): Promise<number> {
    assertStoragePrefix(prefix, false);
    let batch: string[] = [];
    let deleted = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const Objects = batch.map((k) => ({ Key: this.opts.prefix + k }));
      try {
        const out = await this.client.send(new DeleteObjectsCommand({ Bucket: this.opts.bucket, Delete: { Objects, Quiet: true } }));
        const failed = out.Errors ?? [];
        if (failed.length > 0) {
          throw new StorageError(`S3 deletePrefix of ${JSON.stringify(prefix)} on ${this.where}: ${failed.length} objects not deleted (${failed[0]?.Code ?? 'unknown'})`);
        }
      } catch (err) {
        if (err instanceof StorageError) throw err;
        this.fail('deletePrefix', prefix, err);
      }
      deleted += batch.length;
      batch = [];
    };
    for await (const key of this.list(prefix)) {
      batch.push(key);
      if (batch.length === 1000) await flush(); // DeleteObjects' maximum per request
    }
    await flush();
    return deleted;
  }

  async *list(prefix: string): AsyncIterable<string> {
    assertStoragePrefix(prefix, true);
    let ContinuationToken: string | undefined;
    do {
      let out;
      try {
        out = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.opts.bucket, Prefix: this.opts.prefix + prefix, ...(ContinuationToken ? { ContinuationToken } : {}) }),
        );
      } catch (err) {
        this.fail('list', prefix, err);
      }
      for (const obj of out.Contents ?? []) {
        if (obj.Key?.startsWith(this.opts.prefix)) yield obj.Key.slice(this.opts.prefix.length);
      }
      ContinuationToken = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  publicUrl(key: string): string {
    const full = this.full(key);
    // MEDIA_PUBLIC_URL addresses the storage prefix (a CDN in front of s3://bucket/prefix).
    if (this.opts.mediaPublicUrl) return joinPublicUrl(this.opts.mediaPublicUrl, key);
    if (this.opts.endpoint) {
      const u = new URL(this.opts.endpoint);
      if (this.opts.forcePathStyle) return joinPublicUrl(u.origin + u.pathname, `${this.opts.bucket}/${full}`);
      return `${u.protocol}//${this.opts.bucket}.${u.host}/${full}`;
    }
    return `https://${this.opts.bucket}.s3.${this.opts.region}.amazonaws.com/${full}`;
  }

  async ping(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.opts.bucket }));
    } catch (err) {
      const e = err as SdkError;
      const msg = `S3 bucket ${this.where} is not reachable (${e.name ?? 'Error'}${e.$metadata?.httpStatusCode ? ` HTTP ${e.$metadata.httpStatusCode}` : ''})`;
      // For readiness every failure (down, missing bucket, denied) means "not ready".
      throw new StorageUnavailableError(msg, { cause: err });
    }
  }

  close(): void {
    this.client.destroy();
  }
}
