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
import { Upload } from '@aws-sdk/lib-storage';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { connectionErrorCode } from '../util/unavailable.ts';
import { redactText } from '../util/redact.ts';
import { StorageError, StorageUnavailableError } from './errors.ts';
import { assertStorageKey, assertStoragePrefix } from './keys.ts';
import { joinPublicUrl } from './public-url.ts';
import type {
  ListedObject,
  ListObjectsOptions,
  ObjectStorage,
  OpenedObject,
  PutOptions,
  StoredObject,
} from './types.ts';

/**
 * A streamed upload's part size and how many parts are in flight: lib-storage buffers at most
 * queueSize * partSize per upload, so ten video copies at once hold about 100 MB (docs/capacity.md).
 */
const UPLOAD_PART_BYTES = 5 * 1024 * 1024;
const UPLOAD_QUEUE = 1;

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

/** ListObjectsV2's maximum keys per request. */
const LIST_PAGE_MAX = 1000;
/** DeleteObjects' maximum keys per request. */
const DELETE_BATCH_MAX = 1000;
/** Parallel single DELETEs when a server will not take a batch. */
const DELETE_CONCURRENCY = 8;

/**
 * Adds Content-MD5 to a request whose body is already serialized (DeleteObjects' XML). Registered
 * per command at the build step: after serialization, before signing.
 */
function withContentMd5(cmd: DeleteObjectsCommand): void {
  cmd.middlewareStack.add(
    (next) => async (args) => {
      const req = args.request as { headers?: Record<string, string>; body?: unknown };
      if (req.headers && (typeof req.body === 'string' || req.body instanceof Uint8Array)) {
        req.headers['content-md5'] = createHash('md5').update(req.body).digest('base64');
      }
      return next(args);
    },
    { step: 'build', name: 'feedmirrorContentMd5' },
  );
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
 * some S3-compatible servers (s3rver among them) with its aws-chunked framing. put is one PutObject,
 * atomic by S3 semantics.
 */
export class S3Storage implements ObjectStorage {
  readonly kind = 's3' as const;
  readonly client: S3Client;
  private readonly where: string;
  /** Set once the server answered a DeleteObjects with 4xx (not 403) or 501: from then on, one DELETE per key. */
  private bulkDeleteRefused = false;
  /** ListObjectsV2 requests sent (the benchmark reports them). */
  listRequests = 0;

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
      requestHandler: {
        requestTimeout: opts.requestTimeoutMs,
        connectionTimeout: Math.min(opts.requestTimeoutMs, 10_000),
      },
    });
    this.where = `s3://${opts.bucket}/${opts.prefix} at ${opts.endpoint ?? `AWS ${opts.region}`}`;
  }

  /** The bucket and the key prefix inside it (an inventory report lists the bucket's full keys). */
  get location(): { bucket: string; prefix: string } {
    return { bucket: this.opts.bucket, prefix: this.opts.prefix };
  }

  private full(key: string): string {
    return this.opts.prefix + assertStorageKey(key);
  }

  /** Network errors and 5xx are retryable (StorageUnavailableError); the rest need the operator. */
  private fail(op: string, key: string, err: unknown): never {
    const e = (err ?? {}) as SdkError;
    const status = e.$metadata?.httpStatusCode;
    // Never the SDK's full message verbatim: it could echo a request URL; names and codes suffice.
    const detail = redactText(
      `${e.name ?? 'Error'}${e.code && e.code !== e.name ? ` ${e.code}` : ''}${status ? ` HTTP ${status}` : ''}: ${(e.message ?? '').slice(0, 200)}`,
    );
    const msg = `S3 ${op} of ${JSON.stringify(key)} on ${this.where} failed (${detail})`;
    const unavailable = status === undefined || status >= 500 || e.$fault === 'server' || e.name === 'TimeoutError';
    throw unavailable ? new StorageUnavailableError(msg, { cause: err }) : new StorageError(msg, { cause: err });
  }

  private isNotFound(err: unknown): boolean {
    const e = err as SdkError | null | undefined;
    return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
  }

  async put(key: string, body: Buffer, opts: PutOptions): Promise<void> {
    const Key = this.full(key);
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.opts.bucket,
          Key,
          Body: body,
          ContentLength: body.length,
          ContentType: opts.contentType,
          CacheControl: opts.cacheControl,
        }),
      );
    } catch (err) {
      this.fail('put', key, err);
    }
  }

  async putStream(key: string, body: Readable, opts: PutOptions): Promise<void> {
    const Key = this.full(key);
    // The SDK's own multipart helper: parts of UPLOAD_PART_BYTES as Buffers (never an aws-chunked
    // stream, see above), a single PutObject for a body smaller than one part, and the multipart
    // upload aborted when the stream or a part fails, so nothing half-written is left.
    const upload = new Upload({
      client: this.client,
      params: {
        Bucket: this.opts.bucket,
        Key,
        Body: body,
        ContentType: opts.contentType,
        CacheControl: opts.cacheControl,
      },
      partSize: UPLOAD_PART_BYTES,
      queueSize: UPLOAD_QUEUE,
      leavePartsOnError: false,
    });
    // A failing source stream must fail the upload (lib-storage reads it with an async iterator).
    const failed = new Promise<never>((_, reject) => body.once('error', reject));
    const done = upload.done();
    failed.catch(() => undefined);
    done.catch(() => undefined);
    try {
      await Promise.race([done, failed]);
    } catch (err) {
      await upload.abort().catch(() => undefined);
      // The source's own error (a cap, not an MP4, the download) is the caller's; the rest is S3's.
      if (body.errored) throw body.errored;
      this.fail('put', key, err);
    }
  }

  async openRead(key: string): Promise<OpenedObject | null> {
    const head = await this.head(key);
    if (!head) return null;
    const Key = this.full(key);
    return {
      size: head.size,
      ...(head.contentType ? { contentType: head.contentType } : {}),
      ...(head.lastModified ? { lastModified: head.lastModified } : {}),
      read: async (start, end) => {
        try {
          const out = await this.client.send(
            new GetObjectCommand({ Bucket: this.opts.bucket, Key, Range: `bytes=${start}-${end}` }),
          );
          return out.Body as Readable;
        } catch (err) {
          this.fail('get', key, err);
        }
      },
    };
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
        ...(out.ETag ? { etag: out.ETag } : {}),
        ...(out.LastModified ? { lastModified: out.LastModified } : {}),
      };
    } catch (err) {
      if (this.isNotFound(err)) return null;
      this.fail('get', key, err);
    }
  }

  async head(key: string): Promise<{ size: number; contentType?: string; etag?: string; lastModified?: Date } | null> {
    const Key = this.full(key);
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key }));
      return {
        size: out.ContentLength ?? 0,
        ...(out.ContentType ? { contentType: out.ContentType } : {}),
        ...(out.ETag ? { etag: out.ETag } : {}),
        ...(out.LastModified ? { lastModified: out.LastModified } : {}),
      };
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

  /**
   * Deletes every key under `prefix`, on every S3-compatible server. One DeleteObjects request per
   * 1000 keys (cheap on AWS), sent with a Content-MD5 header: newer SDKs send only a CRC32 checksum,
   * and several S3-compatible servers refuse a multi-object delete without Content-MD5. When the
   * server still refuses the batch (not implemented, a header it wants, or a 5xx: s3rver answers 500
   * when two deletes of one batch race to remove the same emptied folder), or refuses some keys,
   * those keys are deleted one by one with bounded concurrency. Deleting is idempotent, so a key the
   * failed batch did remove costs one harmless DELETE.
   */
  async deletePrefix(prefix: string): Promise<number> {
    assertStoragePrefix(prefix, false);
    let batch: string[] = [];
    let deleted = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const keys = batch;
      batch = [];
      const leftover = this.bulkDeleteRefused ? keys : await this.deleteBatch(prefix, keys);
      if (leftover.length > 0) await this.deleteEach(prefix, leftover);
      deleted += keys.length;
    };
    for await (const key of this.list(prefix)) {
      batch.push(key);
      if (batch.length === DELETE_BATCH_MAX) await flush();
    }
    await flush();
    return deleted;
  }

  /** One DeleteObjects; returns the keys that still need deleting one by one. */
  private async deleteBatch(prefix: string, keys: string[]): Promise<string[]> {
    const cmd = new DeleteObjectsCommand({
      Bucket: this.opts.bucket,
      Delete: { Objects: keys.map((k) => ({ Key: this.opts.prefix + k })), Quiet: true },
    });
    withContentMd5(cmd);
    try {
      const out = await this.client.send(cmd);
      const refused = new Set((out.Errors ?? []).map((e) => e.Key).filter((k): k is string => typeof k === 'string'));
      return keys.filter((k) => refused.has(this.opts.prefix + k));
    } catch (err) {
      const e = (err ?? {}) as SdkError;
      const status = e.$metadata?.httpStatusCode;
      // No answer at all (storage down) or access denied: one-by-one deletes would fail the same way.
      if (status === undefined || status === 403) this.fail('deletePrefix', prefix, err);
      // A client error or 501 NotImplemented: the server does not take the batch as sent; stop asking.
      // Other 5xx may be passing, so the next deletePrefix tries the batch again.
      if (status < 500 || status === 501) this.bulkDeleteRefused = true;
      return keys;
    }
  }

  /** DELETE per key, DELETE_CONCURRENCY at a time; a key that fails is tried once more, alone. */
  private async deleteEach(prefix: string, keys: string[]): Promise<void> {
    const failed: string[] = [];
    let next = 0;
    const lane = async () => {
      while (next < keys.length) {
        const key = keys[next++]!;
        await this.delete(key).catch(() => failed.push(key));
      }
    };
    await Promise.all(Array.from({ length: Math.min(DELETE_CONCURRENCY, keys.length) }, lane));
    // Retried alone: some servers (s3rver) fail a DELETE that races another one in the same folder.
    for (const key of failed) {
      try {
        await this.delete(key);
      } catch (err) {
        throw new StorageError(
          `S3 deletePrefix of ${JSON.stringify(prefix)} on ${this.where}: could not delete ${JSON.stringify(key)}`,
          {
            retryable: err instanceof StorageError && err.retryable,
            cause: err,
          },
        );
      }
    }
  }

  async *list(prefix: string): AsyncIterable<string> {
    for await (const o of this.listObjects(prefix)) yield o.key;
  }

  /**
   * Paged by StartAfter (the last key of the page before) rather than the continuation token:
   * the same pages on S3, and S3-compatible servers that cannot make continuation tokens (s3rver
   * on Node's OpenSSL 3 has no DES) still page.
   */
  async *listObjects(prefix: string, opts: ListObjectsOptions = {}): AsyncIterable<ListedObject> {
    assertStoragePrefix(prefix, true);
    const MaxKeys = Math.max(1, Math.min(LIST_PAGE_MAX, opts.pageSize ?? LIST_PAGE_MAX));
    let StartAfter = opts.startAfter !== undefined ? this.opts.prefix + opts.startAfter : undefined;
    for (;;) {
      let out;
      try {
        out = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.opts.bucket,
            Prefix: this.opts.prefix + prefix,
            MaxKeys,
            ...(StartAfter !== undefined ? { StartAfter } : {}),
          }),
        );
      } catch (err) {
        this.fail('list', prefix, err);
      }
      this.listRequests++;
      const contents = out.Contents ?? [];
      for (const obj of contents) {
        if (!obj.Key?.startsWith(this.opts.prefix)) continue;
        yield {
          key: obj.Key.slice(this.opts.prefix.length),
          size: obj.Size ?? 0,
          ...(obj.ETag ? { etag: obj.ETag } : {}),
          ...(obj.LastModified ? { lastModified: obj.LastModified } : {}),
        };
      }
      const last = contents[contents.length - 1]?.Key;
      if (!out.IsTruncated || last === undefined) return;
      StartAfter = last;
    }
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
      const code = connectionErrorCode(err);
      const why = `${e.name ?? 'Error'}${code && code !== e.name ? ` ${code}` : ''}${e.$metadata?.httpStatusCode ? ` HTTP ${e.$metadata.httpStatusCode}` : ''}`;
      const msg =
        e.name === 'CredentialsProviderError'
          ? `no S3 credentials found for ${this.where}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with an instance role`
          : `S3 bucket ${this.where} is not reachable (${why}); check S3_ENDPOINT, the bucket and the credentials`;
      // For readiness every failure (down, missing bucket, denied) means "not ready".
      throw new StorageUnavailableError(msg, { cause: err });
    }
  }

  /**
   * Nothing to sweep: every write is one PutObject, which S3 applies whole or not at all, so a
   * killed process leaves no partial object. feedmirror never starts a multipart upload; the
   * incomplete uploads others may leave in the bucket are the job of the bucket's lifecycle rule
   * (README: AbortIncompleteMultipartUpload), not of a sweep that would need the right to list
   * and abort every upload in the bucket.
   */
  sweepLeftovers(_olderThan: Date): Promise<number> {
    return Promise.resolve(0);
  }

  close(): void {
    this.client.destroy();
  }
}
