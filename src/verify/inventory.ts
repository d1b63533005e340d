import { createReadStream } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { mediaPrefix } from '../storage/keys.ts';
import type { ListedObject } from '../storage/types.ts';
import type { Listing } from './listing.ts';

/**
 * An S3 Inventory report as verify's listing (`feedmirror verify --inventory <manifest.json>`):
 * for a bucket too large to list every day, S3 writes a daily or weekly list of every object
 * (key, size, last-modified, ETag) at no request cost to the bucket. The report as AWS writes it:
 * `manifest.json` (its `files`, `fileFormat` and `fileSchema`) and the data files it names, CSV
 * (gzipped or not) with URL-encoded keys, each file in key order. Downloaded as it lies in the
 * destination bucket (`aws s3 cp --recursive s3://<destination>/<prefix>/<bucket>/<config>/ .`),
 * a data file named `<config>/data/<file>` is looked for in `data/` beside the manifest's
 * folder, then beside the manifest. ORC and Parquet reports are refused with one line: configure
 * the inventory as CSV.
 *
 * A report is a day or more old: what it alone says is wrong (missing, a wrong size, an orphan)
 * is confirmed with a HEAD before it is reported (./merge.ts), so an object written or deleted
 * since is not named. The data files are merged by key (k-way) and read once, front to back:
 * accounts ask for their part in key order, and an account's part is all that is held.
 */

export class InventoryError extends Error {}

interface Manifest {
  sourceBucket?: string;
  fileFormat?: string;
  fileSchema?: string;
  creationTimestamp?: string;
  files?: Array<{ key?: string }>;
}

/** One CSV line of a report: quoted fields, `""` inside a quoted field for a quote. */
export function parseCsvLine(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i <= line.length) {
    if (line[i] === '"') {
      let v = '';
      i++;
      for (;;) {
        const q = line.indexOf('"', i);
        if (q === -1) throw new InventoryError(`an unterminated quoted field in ${JSON.stringify(line.slice(0, 80))}`);
        v += line.slice(i, q);
        if (line[q + 1] === '"') {
          v += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      out.push(v);
      i++; // the comma
    } else {
      const c = line.indexOf(',', i);
      const end = c === -1 ? line.length : c;
      out.push(line.slice(i, end));
      i = end + 1;
    }
  }
  return out;
}

async function firstThere(candidates: string[]): Promise<string | undefined> {
  for (const c of candidates) {
    try {
      await access(c);
      return c;
    } catch {
      // next
    }
  }
  return undefined;
}

/** Open a report: its manifest read and checked; the data files are read as accounts ask. */
export async function openInventory(
  manifestPath: string,
  where: { bucket: string; prefix: string },
): Promise<Listing & { files: number }> {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Manifest;
  } catch (err) {
    throw new InventoryError(`cannot read the inventory manifest ${manifestPath}: ${(err as Error).message}`);
  }
  if ((manifest.fileFormat ?? '').toUpperCase() !== 'CSV')
    throw new InventoryError(
      `the inventory ${manifestPath} is ${manifest.fileFormat ?? 'of no format'}: only CSV reports are read (set the inventory's output format to CSV)`,
    );
  if (manifest.sourceBucket !== where.bucket)
    throw new InventoryError(
      `the inventory ${manifestPath} lists bucket ${manifest.sourceBucket ?? '(none)'}, not ${where.bucket} (STORAGE_URL)`,
    );
  const columns = (manifest.fileSchema ?? '').split(',').map((c) => c.trim());
  const col = (name: string) => columns.indexOf(name);
  const [keyAt, sizeAt, modifiedAt, etagAt] = [col('Key'), col('Size'), col('LastModifiedDate'), col('ETag')];
  if (keyAt === -1 || sizeAt === -1)
    throw new InventoryError(
      `the inventory ${manifestPath} has no Key or Size column (fileSchema: ${manifest.fileSchema})`,
    );
  const created = Number(manifest.creationTimestamp);
  const dir = path.dirname(path.resolve(manifestPath));
  const files: string[] = [];
  for (const f of manifest.files ?? []) {
    const base = path.basename(f.key ?? '');
    const found = await firstThere([
      path.join(dir, '..', 'data', base),
      path.join(dir, 'data', base),
      path.join(dir, base),
    ]);
    if (!found)
      throw new InventoryError(`the inventory's data file ${f.key} is not beside ${manifestPath} (nor in ../data/)`);
    files.push(found);
  }

  const media = `${where.prefix}media/`;
  /** One data file's objects under media/, in its (key) order. */
  async function* rows(file: string): AsyncGenerator<ListedObject> {
    const input = file.endsWith('.gz') ? createReadStream(file).pipe(createGunzip()) : createReadStream(file);
    let last = '';
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      if (line === '') continue;
      const f = parseCsvLine(line);
      const full = decodeURIComponent(f[keyAt] ?? '');
      if (!full.startsWith(media)) continue;
      if (full <= last) throw new InventoryError(`the inventory's data file ${file} is not in key order at ${full}`);
      last = full;
      const modified = modifiedAt === -1 ? undefined : new Date(f[modifiedAt] ?? '');
      const etag = etagAt === -1 ? '' : (f[etagAt] ?? '');
      yield {
        key: full.slice(where.prefix.length),
        size: Number(f[sizeAt]),
        ...(modified && !Number.isNaN(modified.getTime()) ? { lastModified: modified } : {}),
        ...(etag ? { etag: `"${etag}"` } : {}),
      };
    }
  }

  /** Every file's rows merged by key: the report as one stream in key order. */
  async function* merged(): AsyncGenerator<ListedObject> {
    const heads = await Promise.all(
      files.map(async (f) => {
        const it = rows(f);
        return { it, cur: await it.next() };
      }),
    );
    for (;;) {
      let min: { head: (typeof heads)[number]; row: ListedObject } | undefined;
      for (const h of heads)
        if (!h.cur.done && (!min || h.cur.value.key < min.row.key)) min = { head: h, row: h.cur.value };
      if (!min) return;
      yield min.row;
      min.head.cur = await min.head.it.next();
    }
  }

  const stream = merged();
  let pending: ListedObject | undefined;
  let done = false;
  let chain: Promise<unknown> = Promise.resolve();
  /** The next account's part: what lies before its prefix is skipped (not an account of ours). */
  const take = async (prefix: string): Promise<ListedObject[]> => {
    const part: ListedObject[] = [];
    while (!done) {
      if (!pending) {
        const n = await stream.next();
        if (n.done) {
          done = true;
          break;
        }
        pending = n.value;
      }
      if (pending.key < prefix) pending = undefined;
      else if (pending.key.startsWith(prefix)) {
        part.push(pending);
        pending = undefined;
      } else break;
    }
    return part;
  };
  return {
    kind: 'inventory',
    files: files.length,
    ...(Number.isFinite(created) && created > 0 ? { takenAt: new Date(created) } : {}),
    media(accountId) {
      // Taken now, in the order the accounts ask: the report is read once, front to back.
      const part = chain.then(() => take(mediaPrefix(accountId)));
      chain = part.catch(() => undefined);
      return (async function* () {
        yield* await part;
      })();
    },
  };
}
