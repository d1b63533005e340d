import type { Readable } from 'node:stream';

/**
 * Object storage behind one small interface: S3 (or any S3-compatible server) and a local folder.
 * Keys are relative, `/`-separated and validated (see keys.ts); implementations apply their own
 * prefix (the `s3://bucket/prefix` part or the folder) and refuse keys that would escape it.
 */
export interface PutOptions {
  contentType: string;
  cacheControl: string;
}

export interface StoredObject {
  body: Buffer;
  contentType?: string;
  cacheControl?: string;
  /**
   * HTTP validators of the stored object, as the storage itself serves them: S3's ETag (the
   * quoted MD5 of a single-part PUT) and LastModified; for a local folder the same quoted MD5 and
   * the file's mtime. `GET /feeds/<id>.json` answers with these, so a reader revalidating against
   * the bucket or against feedmirror sees the same ETag.
   */
  etag?: string;
  lastModified?: Date;
}

/** One object as a listing gives it: no content type (a listing does not carry it). */
export interface ListedObject {
  key: string;
  size: number;
  /** S3's ETag (quoted); a local folder gives none (it would mean reading every file). */
  etag?: string;
  lastModified?: Date;
}

export interface ListObjectsOptions {
  /** Keys a request (S3's MaxKeys, at most 1000); default 1000. */
  pageSize?: number;
  /** Only keys after this one (S3's StartAfter). */
  startAfter?: string;
}

export interface OpenedObject {
  size: number;
  contentType?: string;
  cacheControl?: string;
  lastModified?: Date;
  /** Bytes start..end, both included (0 <= start <= end < size). */
  read(start: number, end: number): Promise<Readable>;
}

export interface ObjectStorage {
  readonly kind: 's3' | 'local';
  /** One atomic write: readers see the old or the new object, never a half-written one. */
  put(key: string, body: Buffer, opts: PutOptions): Promise<void>;
  /**
   * One write from a stream (a video file), never holding it whole: S3's multipart upload
   * (lib-storage), or a temporary file renamed into place. Atomic as put is: readers see the
   * object only once it is complete, and a stream that fails leaves nothing behind. A failing
   * stream's own error is rethrown as it is (the caller's: a cap, a bad file); the storage's as
   * StorageError.
   */
  putStream(key: string, body: Readable, opts: PutOptions): Promise<void>;
  /** null when the key does not exist. */
  get(key: string): Promise<StoredObject | null>;
  /**
   * An object opened for reading part of it (an HTTP Range request): its size and metadata, and
   * its bytes start..end (inclusive) as a stream. null when the key does not exist.
   */
  openRead(key: string): Promise<OpenedObject | null>;
  head(key: string): Promise<{ size: number; contentType?: string; etag?: string; lastModified?: Date } | null>;
  /** A missing key is fine. */
  delete(key: string): Promise<void>;
  /** Deletes every key starting with `prefix` (a non-empty prefix); returns how many were deleted. */
  deletePrefix(prefix: string): Promise<number>;
  /** Keys starting with `prefix` (plain string prefix, like S3), in lexicographic order. */
  list(prefix: string): AsyncIterable<string>;
  /**
   * Keys starting with `prefix` with their size and last-modified time (S3: ETag too), streamed a
   * page at a time in byte order of the keys (S3's order; keys are ASCII, so also JavaScript's
   * string order and PostgreSQL's COLLATE "C"): memory stays one page whatever the prefix holds.
   */
  listObjects(prefix: string, opts?: ListObjectsOptions): AsyncIterable<ListedObject>;
  /** MEDIA_PUBLIC_URL + key, or the implementation's default address of the object. */
  publicUrl(key: string): string;
  /** Readiness check: throws StorageUnavailableError when the storage cannot be reached. */
  ping(): Promise<void>;
  /**
   * Removes what unfinished writes left behind before `olderThan` (the daily housekeeping calls
   * it); returns how many were removed.
   */
  sweepLeftovers(olderThan: Date): Promise<number>;
}
