import { createHash, randomBytes } from 'node:crypto';
import { constants as fsc } from 'node:fs';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink, access } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { InvalidKeyError, StorageError, StorageUnavailableError } from './errors.ts';
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
 * Object storage in a local folder, the default when STORAGE_URL is not `s3://`.
 *
 * Layout: the object's bytes live at `<root>/<key>` untouched, so the folder can be served as-is by
 * any static file server (point MEDIA_PUBLIC_URL at it). Metadata (content type, cache control)
 * lives in a sidecar `<root>/.meta/<key>.json`; when the sidecar is missing the content type is
 * derived from the extension. Keys never have a segment starting with a dot, so `.meta` and the
 * temporary files (`.<name>.<random>.tmp`) can never collide with an object and are never listed.
 *
 * Atomicity: put writes a temporary file in the object's own folder and renames it over the key
 * (rename is atomic within one file system). The sidecar is renamed into place first; the body is
 * what readers must never see half-written.
 */
const META_DIR = '.meta';

const EXTENSION_TYPES: Record<string, string> = {
  '.json': 'application/json',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  '.avif': 'image/avif',
  '.mp4': 'video/mp4',
  '.txt': 'text/plain',
};

const metaSchema = (v: unknown): { contentType?: string; cacheControl?: string } => {
  if (!v || typeof v !== 'object') return {};
  const o = v as Record<string, unknown>;
  return {
    ...(typeof o.contentType === 'string' ? { contentType: o.contentType } : {}),
    ...(typeof o.cacheControl === 'string' ? { cacheControl: o.cacheControl } : {}),
  };
};

/** What writeAtomic names its temporary files: `.<name>.<12 hex>.tmp`. */
const TEMPORARY_NAME = /^\..+\.[0-9a-f]{12}\.tmp$/;

function isNotFound(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** The ETag S3 gives a single-part PUT: the body's MD5 in hex, quoted. Not a security hash. */
function localEtag(body: Buffer): string {
  return `"${createHash('md5').update(body).digest('hex')}"`;
}

/** localEtag of a file read as a stream: a video copy is not read into memory to be checked. */
async function streamedEtag(file: string): Promise<string> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return `"${hash.digest('hex')}"`;
}

export class LocalStorage implements ObjectStorage {
  readonly kind = 'local' as const;
  readonly root: string;

  constructor(
    root: string,
    private readonly mediaPublicUrl?: string,
  ) {
    this.root = path.resolve(root);
  }

  /** The file of a key; refuses anything that resolves outside the root even if keys.ts was bypassed. */
  private file(key: string): string {
    assertStorageKey(key);
    const full = path.resolve(this.root, ...key.split('/'));
    if (!full.startsWith(this.root + path.sep))
      throw new InvalidKeyError('key', key, 'resolves outside the storage folder');
    return full;
  }

  private metaFile(key: string): string {
    const full = path.resolve(this.root, META_DIR, ...key.split('/')) + '.json';
    if (!full.startsWith(path.join(this.root, META_DIR) + path.sep))
      throw new InvalidKeyError('key', key, 'resolves outside the storage folder');
    return full;
  }

  private fail(op: string, key: string, err: unknown): never {
    const code = (err as NodeJS.ErrnoException | undefined)?.code ?? 'unknown';
    // A full disk or a vanished mount may clear up; a permission problem needs the operator.
    const retryable = ['ENOSPC', 'EIO', 'EAGAIN', 'EBUSY', 'EMFILE', 'ENFILE', 'ESTALE'].includes(code);
    const msg = `local storage ${op} of ${key} in ${this.root} failed (${code})`;
    throw retryable ? new StorageUnavailableError(msg, { cause: err }) : new StorageError(msg, { cause: err });
  }

  /**
   * R-NET-4: the temporary file goes on every failure path (open, write, fsync, close, rename),
   * not only when the rename fails: a full disk or a file size limit failed the write and left
   * its temporary file behind (162 after one full-disk run). A crash can still leave one;
   * sweepLeftovers removes those.
   */
  private async writeAtomic(target: string, body: Buffer): Promise<void> {
    const dir = path.dirname(target);
    await mkdir(dir, { recursive: true });
    const tmp = path.join(dir, `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
    const fh = await open(tmp, 'wx');
    try {
      try {
        await fh.writeFile(body);
        await fh.sync(); // the rename must never expose a file whose bytes are not on disk yet
      } finally {
        await fh.close();
      }
      await rename(tmp, target);
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
  }

  async put(key: string, body: Buffer, opts: PutOptions): Promise<void> {
    const file = this.file(key);
    const meta = this.metaFile(key);
    try {
      await this.writeAtomic(
        meta,
        Buffer.from(JSON.stringify({ contentType: opts.contentType, cacheControl: opts.cacheControl })),
      );
      await this.writeAtomic(file, body);
    } catch (err) {
      this.fail('put', key, err);
    }
  }

  async putStream(key: string, body: Readable, opts: PutOptions): Promise<void> {
    const file = this.file(key);
    const meta = this.metaFile(key);
    let tmp: string | undefined;
    try {
      await this.writeAtomic(
        meta,
        Buffer.from(JSON.stringify({ contentType: opts.contentType, cacheControl: opts.cacheControl })),
      );
      // As writeAtomic, with the body streamed: a temporary file beside the object, synced, then
      // renamed over the key, so a reader never meets a half-written video; any failure removes it.
      const dir = path.dirname(file);
      await mkdir(dir, { recursive: true });
      tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
      const fh = await open(tmp, 'wx');
      try {
        await pipeline(body, createWriteStream('', { fd: fh.fd, autoClose: false }));
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, file);
      tmp = undefined;
    } catch (err) {
      if (tmp) await rm(tmp, { force: true }).catch(() => undefined);
      // The source's own error (a cap, not an MP4, the download) is the caller's.
      if (body.errored) throw body.errored;
      this.fail('put', key, err);
    }
  }

  async openRead(key: string): Promise<OpenedObject | null> {
    const file = this.file(key);
    let st;
    try {
      st = await stat(file);
    } catch (err) {
      if (isNotFound(err)) return null;
      this.fail('get', key, err);
    }
    if (!st.isFile()) return null;
    const meta = await this.readMeta(key);
    return {
      size: st.size,
      ...meta,
      lastModified: st.mtime,
      read: async (start, end) => createReadStream(file, { start, end }),
    };
  }

  private async readMeta(key: string): Promise<{ contentType?: string; cacheControl?: string }> {
    let meta: { contentType?: string; cacheControl?: string } = {};
    try {
      meta = metaSchema(JSON.parse(await readFile(this.metaFile(key), 'utf8')));
    } catch {
      // Missing or unreadable sidecar (object copied in by hand): fall back to the extension.
    }
    if (!meta.contentType) {
      const fromExt = EXTENSION_TYPES[path.extname(key).toLowerCase()];
      if (fromExt) meta.contentType = fromExt;
    }
    return meta;
  }

  async get(key: string): Promise<StoredObject | null> {
    const file = this.file(key);
    let body: Buffer;
    let mtime: Date;
    try {
      // stat before reading: a put renaming a new file in between gives an older mtime with newer
      // bytes (revalidated again next time), never a newer mtime with older bytes.
      mtime = (await stat(file)).mtime;
      body = await readFile(file);
    } catch (err) {
      if (isNotFound(err) || (err as NodeJS.ErrnoException).code === 'EISDIR') return null;
      this.fail('get', key, err);
    }
    return { body, ...(await this.readMeta(key)), etag: localEtag(body), lastModified: mtime };
  }

  async head(key: string): Promise<{ size: number; contentType?: string; etag?: string; lastModified?: Date } | null> {
    const file = this.file(key);
    try {
      const st = await stat(file);
      if (!st.isFile()) return null;
      const { contentType } = await this.readMeta(key);
      return {
        size: st.size,
        ...(contentType ? { contentType } : {}),
        etag: await streamedEtag(file),
        lastModified: st.mtime,
      };
    } catch (err) {
      if (isNotFound(err)) return null;
      this.fail('head', key, err);
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.file(key);
    try {
      await rm(file, { force: true });
      await rm(this.metaFile(key), { force: true });
      await this.pruneEmptyDirs(path.dirname(file));
    } catch (err) {
      if (!isNotFound(err)) this.fail('delete', key, err);
    }
  }

  /** Remove empty folders up to the root, so deleted media leave no empty directories behind. */
  private async pruneEmptyDirs(dir: string): Promise<void> {
    let current = dir;
    while (current.startsWith(this.root + path.sep)) {
      try {
        await rmdir(current);
      } catch {
        return; // not empty (or gone): stop climbing
      }
      current = path.dirname(current);
    }
  }

  async deletePrefix(prefix: string): Promise<number> {
    assertStoragePrefix(prefix, false);
    const keys: string[] = [];
    for await (const key of this.list(prefix)) keys.push(key);
    for (const key of keys) {
      try {
        await unlink(this.file(key));
      } catch (err) {
        if (!isNotFound(err)) this.fail('deletePrefix', key, err);
      }
      await rm(this.metaFile(key), { force: true });
    }
    // Folders emptied by the deletion (objects and sidecars), deepest first.
    const dirs = new Set<string>();
    for (const k of keys) {
      dirs.add(path.dirname(this.file(k)));
      dirs.add(path.dirname(this.metaFile(k)));
    }
    for (const d of [...dirs].sort((a, b) => b.length - a.length)) await this.pruneEmptyDirs(d);
    return keys.length;
  }

  async *list(prefix: string): AsyncIterable<string> {
    for await (const key of this.walkKeys(prefix)) yield key;
  }

  async *listObjects(prefix: string, opts: ListObjectsOptions = {}): AsyncIterable<ListedObject> {
    for await (const key of this.walkKeys(prefix)) {
      if (opts.startAfter !== undefined && key <= opts.startAfter) continue;
      let st;
      try {
        st = await stat(this.file(key));
      } catch (err) {
        if (isNotFound(err)) continue; // deleted since its folder was read
        this.fail('list', prefix, err);
      }
      yield { key, size: st.size, lastModified: st.mtime };
    }
  }

  /**
   * The keys under `prefix` in S3's order (byte order of the whole key), streamed: each folder is
   * read and sorted on its own, a folder sorting as its name followed by `/` (so `a-b.jpg`, 0x2D,
   * comes before the folder `a`'s keys `a/…`, 0x2F, as in S3). Memory is one folder's entries per
   * level, never the whole prefix.
   */
  private async *walkKeys(prefix: string): AsyncGenerator<string> {
    assertStoragePrefix(prefix, true);
    // Start walking at the deepest folder the prefix names; filter the rest by string prefix (S3 semantics).
    const lastSlash = prefix.lastIndexOf('/');
    const startRel = lastSlash === -1 ? '' : prefix.slice(0, lastSlash);
    const start = startRel ? path.join(this.root, ...startRel.split('/')) : this.root;
    const walk = async function* (this: LocalStorage, dir: string, rel: string): AsyncGenerator<string> {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (isNotFound(err)) return;
        this.fail('list', prefix, err);
      }
      const named = entries
        .filter((e) => !e.name.startsWith('.') && (e.isDirectory() || e.isFile())) // .meta, temporary files
        .map((e) => ({ e, sortAs: e.isDirectory() ? `${e.name}/` : e.name }))
        .sort((a, b) => (a.sortAs < b.sortAs ? -1 : a.sortAs > b.sortAs ? 1 : 0));
      for (const { e } of named) {
        const key = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) {
          if (prefix.startsWith(key + '/') || key.startsWith(prefix) || (key + '/').startsWith(prefix))
            yield* walk.call(this, path.join(dir, e.name), key);
        } else if (key.startsWith(prefix)) {
          yield key;
        }
      }
    };
    yield* walk.call(this, start, startRel);
  }

  /**
   * R-NET-4: temporary files of writes that never finished (the process was killed between
   * creating one and renaming it), last modified before `olderThan`: removed. Younger ones may
   * belong to a write in progress and stay. Everything under the root is looked at, sidecars
   * included; only names writeAtomic makes are touched, and symbolic links are never followed.
   */
  async sweepLeftovers(olderThan: Date): Promise<number> {
    let removed = 0;
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (isNotFound(err)) return;
        this.fail('sweep', path.relative(this.root, dir) || '.', err);
      }
      for (const e of entries) {
        const full = path.join(dir, e.name);
        if (e.isDirectory()) await walk(full);
        else if (e.isFile() && TEMPORARY_NAME.test(e.name)) {
          try {
            if ((await stat(full)).mtime >= olderThan) continue;
            await unlink(full);
            removed++;
          } catch (err) {
            if (!isNotFound(err)) this.fail('sweep', path.relative(this.root, full), err);
          }
        }
      }
    };
    await walk(this.root);
    return removed;
  }

  publicUrl(key: string): string {
    assertStorageKey(key);
    return this.mediaPublicUrl ? joinPublicUrl(this.mediaPublicUrl, key) : pathToFileURL(this.file(key)).href;
  }

  async ping(): Promise<void> {
    try {
      await mkdir(this.root, { recursive: true });
      await access(this.root, fsc.W_OK | fsc.R_OK);
    } catch (err) {
      throw new StorageUnavailableError(
        `local storage folder ${this.root} is not writable (${(err as NodeJS.ErrnoException).code ?? 'unknown'})`,
        { cause: err },
      );
    }
  }
}
