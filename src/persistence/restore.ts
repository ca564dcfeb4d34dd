// Restores a snapshot into a server's folders: missing entries are written, a local one newer
// than the snapshot's is kept, others replaced. Every object is fetched once (a few at a time)
// and every file checked against its content hash before it is written: a damaged one is
// reported and left out, the rest restored. The files of each object are checked and written
// together (write-batch.ts), in worker threads when there is much to write. Afterwards the
// local index cache holds the written files' stat, so the next snapshot need not read them.
import { chmodSync, lstatSync, mkdirSync, readlinkSync, utimesSync, type Stats } from 'node:fs';
import type { Catalog } from './catalog.ts';
import { contentHasher } from './hash.ts';
import { byteKey, DamagedIndexError, displayPath, INDEX_FORMAT, pathBytes, targetBytes, type EntryRecord, type FileRecord, type LinkRecord, type SnapshotIndex } from './index-file.ts';
import { assertServerName } from './keys.ts';
import { forEachLimited } from './limit.ts';
import { Slicer } from './slices.ts';
import type { IndexCache } from './local-cache.ts';
import type { StoreClient } from './store-client.ts';
import { SnapshotNotFoundError, type RestoreResult, type SnapshotRoot } from './types.ts';
import { writeBatch, type WriteEntry, type WriteOutcome } from './write-batch.ts';
import { childPath, writeAll, writeFileAtomic, writeLinkAtomic, type WrittenStat } from './write-file.ts';
import { PoolFailure, type WorkPool } from './work-pool.ts';

export interface RestoreOptions {
  snapshotId?: string;
  roots: SnapshotRoot[];
  signal?: AbortSignal;
  /** Replace local entries even when newer than the snapshot's (restoring a chosen older snapshot on purpose). */
  overwriteNewer?: boolean;
}

export interface RestoreContext {
  client: StoreClient;
  catalog: Catalog;
  cache: IndexCache;
  log: (message: string) => void;
  /** Checks and writes files in worker threads when the files to write add up to this many bytes or more. */
  parallelMinBytes: number;
  pool: () => WorkPool;
}

/** Restored mtimes can differ from the recorded ones by rounding (under a microsecond): within this they are the same. */
const SAME_MTIME_MS = 1;

interface Placed {
  record: EntryRecord;
  abs: Buffer;
  /** `<root id>/<path>`, for reports. */
  label: string;
}

export async function restoreSnapshot(context: RestoreContext, name: string, options: RestoreOptions): Promise<RestoreResult> {
  assertServerName(name);
  const { signal } = options;
  const index = await findIndex(context, name, options.snapshotId, signal);
  const result: RestoreResult = {
    snapshot: index.info, manifestText: index.manifestText, status: index.status, extensions: index.extensions,
    files: 0, bytes: 0, keptNewer: [], corrupted: [],
  };
  if (options.roots.length === 0) return result;

  const slicer = new Slicer();
  const stats = new Map<FileRecord, WrittenStat>();
  const writes: Placed[] = [];
  const createdDirs: Placed[] = [];
  const counted = (record: EntryRecord) => {
    result.files++;
    if (record.type === 'file') result.bytes += record.size;
  };
  for (const target of options.roots) {
    const root = index.roots.find((candidate) => candidate.id === target.id);
    if (!root) continue;
    const dir = Buffer.from(target.dir);
    // In a folder this restore made there is nothing local to compare with: no lstat needed.
    const made = new Set<string>();
    if (mkdirSync(target.dir, { recursive: true }) !== undefined) made.add(byteKey(dir));
    const placed: Placed[] = [];
    for (const record of root.entries) {
      const rel = pathBytes(record);
      const label = `${root.id}/${displayPath(rel)}`;
      // An index names paths below its root only; one that does not is damaged, and never written.
      if (isBelow(rel)) placed.push({ record, abs: childPath(dir, rel), label });
      else result.corrupted.push(label);
    }
    // Folders first, in order (parents before children); made writable now, given their mode last.
    const blocked: Buffer[] = [];
    for (const entry of placed) {
      if (entry.record.type !== 'dir') continue;
      signal?.throwIfAborted();
      if (blocked.some((prefix) => isUnder(entry.abs, prefix))) continue;
      while (slicer.due()) await slicer.pass();
      try {
        mkdirSync(entry.abs, { mode: 0o700 });
        createdDirs.push(entry);
        made.add(byteKey(entry.abs));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        if (!lstatSync(entry.abs).isDirectory()) {
          result.keptNewer.push(entry.label);
          blocked.push(entry.abs);
        }
      }
    }
    for (const entry of placed) {
      if (entry.record.type === 'dir') continue;
      while (slicer.due()) await slicer.pass();
      if (blocked.some((prefix) => isUnder(entry.abs, prefix))) {
        result.keptNewer.push(entry.label);
        continue;
      }
      const inMadeFolder = made.has(byteKey(entry.abs.subarray(0, entry.abs.lastIndexOf(0x2f))));
      const local = inMadeFolder ? undefined : lstatSync(entry.abs, { throwIfNoEntry: false });
      const verdict = compare(entry.record, local, options.overwriteNewer ?? false, entry.abs);
      if (verdict === 'newer') {
        result.keptNewer.push(entry.label);
      } else if (verdict === 'same') {
        counted(entry.record);
        if (entry.record.type === 'file') stats.set(entry.record, { size: local!.size, mtimeMs: local!.mtimeMs, ino: local!.ino, mode: local!.mode & 0o7777 });
      } else {
        writes.push(entry);
      }
    }
  }

  await writeEntries(context, index, writes, result, stats, counted, slicer, signal);

  // Folders this restore made get their mode and mtime last, deepest first (writing into them changed their mtime).
  for (const entry of createdDirs.reverse()) {
    const record = entry.record as Extract<EntryRecord, { type: 'dir' }>;
    chmodSync(entry.abs, record.mode);
    utimesSync(entry.abs, record.mtimeMs / 1000, record.mtimeMs / 1000);
  }
  await context.cache.write(name, cacheIndex(index, stats));
  return result;
}

/** The asked snapshot, or the newest whose index can be read. */
async function findIndex(context: RestoreContext, name: string, snapshotId: string | undefined, signal?: AbortSignal): Promise<SnapshotIndex> {
  const { ids } = await context.catalog.server(name, signal);
  if (snapshotId !== undefined) {
    const index = ids.includes(snapshotId) ? await context.catalog.readIndex(name, snapshotId, signal) : undefined;
    if (!index) throw new SnapshotNotFoundError(`server ${name} has no snapshot ${snapshotId}: list them with GET /servers/{id}/snapshots`);
    return index;
  }
  for (const id of [...ids].reverse()) {
    try {
      const index = await context.catalog.readIndex(name, id, signal);
      if (index) return index;
    } catch (error) {
      if (!(error instanceof DamagedIndexError)) throw error;
      context.log(`restoring ${name} from an older snapshot: ${error.message}`);
    }
  }
  throw new SnapshotNotFoundError(`the store holds no snapshot of server ${name}`);
}

function compare(record: EntryRecord, local: Stats | undefined, overwriteNewer: boolean, abs: Buffer): 'write' | 'same' | 'newer' {
  if (!local) return 'write';
  if (local.isDirectory()) return 'newer'; // a folder where the snapshot has a file: never removed
  if (!overwriteNewer && local.mtimeMs > record.mtimeMs + SAME_MTIME_MS) return 'newer';
  if (record.type === 'file') {
    const same = local.isFile() && local.size === record.size && (local.mode & 0o7777) === record.mode && Math.abs(local.mtimeMs - record.mtimeMs) <= SAME_MTIME_MS;
    return same ? 'same' : 'write';
  }
  if (record.type === 'link' && local.isSymbolicLink()) {
    try {
      if (readlinkSync(abs, { encoding: 'buffer' }).equals(targetBytes(record))) return 'same';
    } catch {
      // gone or changed since the lstat: written anew
    }
  }
  return 'write';
}

/** Writes files grouped by the object holding them (each fetched once), files in parts one by one, links and empty files directly. */
async function writeEntries(
  context: RestoreContext, index: SnapshotIndex, writes: Placed[], result: RestoreResult,
  stats: Map<FileRecord, WrittenStat>, counted: (record: EntryRecord) => void, slicer: Slicer, signal?: AbortSignal,
): Promise<void> {
  const byObject = new Map<number, Array<Placed & { record: FileRecord }>>();
  const jobs: Array<() => Promise<void>> = [];
  let batchedBytes = 0;
  for (const entry of writes) {
    const { record } = entry;
    if (record.type === 'link') {
      jobs.push(async () => {
        while (slicer.due()) await slicer.pass();
        writeLinkAtomic(entry.abs, targetBytes(record as LinkRecord), record.mtimeMs);
        counted(record);
      });
    } else if (record.type === 'file' && record.parts.length === 1) {
      const object = record.parts[0][0];
      if (!byObject.has(object)) byObject.set(object, []);
      byObject.get(object)!.push(entry as Placed & { record: FileRecord });
      batchedBytes += record.size;
    } else if (record.type === 'file') {
      jobs.push(() => writeFromParts(context, index, entry as Placed & { record: FileRecord }, result, stats, counted, slicer, signal));
    }
  }
  const pool = context.pool().wants(batchedBytes, context.parallelMinBytes) ? context.pool() : undefined;
  // Until a worker runs (starting one takes tens of milliseconds), objects are written here.
  pool?.warm();
  if (pool?.failure) context.log(`restoring ${index.info.name} on the event loop's thread instead: ${pool.failure.message}`);
  for (const [object, entries] of byObject) {
    jobs.push(async () => {
      const key = index.objects[object];
      const batch = entries.map(({ abs, record }): WriteEntry => ({
        abs, offset: record.parts[0][1], length: record.parts[0][2], hash: record.hash, mode: record.mode, mtimeMs: record.mtimeMs,
      }));
      // A missing object (or a part naming no object: a damaged index) leaves every file in it corrupted.
      const fetch = async () => {
        const bytes = key ? await context.client.get(key, signal) : undefined;
        if (!bytes) context.log(`restoring ${index.info.name}: the object ${key ?? `number ${object}`} is missing`);
        return bytes ?? Buffer.alloc(0);
      };
      const bytes = await fetch();
      let outcomes: WriteOutcome[];
      if (pool && pool.online > 0) {
        // Handed over without a copy when the buffer is the object's alone.
        const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
        outcomes = await pool.run({ kind: 'write', bytes, entries: batch, algorithm: index.hash }, own ? [bytes.buffer as ArrayBuffer] : []).catch(async (error) => {
          if (!(error instanceof PoolFailure)) throw error;
          context.log(`restoring ${index.info.name} on the event loop's thread instead: ${error.message}`);
          return writeBatch(await fetch(), batch, index.hash, slicer);
        });
      } else {
        outcomes = await writeBatch(bytes, batch, index.hash, slicer);
      }
      outcomes.forEach((outcome, i) => {
        const entry = entries[i];
        if (outcome.kind === 'corrupted') return void result.corrupted.push(entry.label);
        const { kind: _, ...stat } = outcome;
        stats.set(entry.record, stat);
        counted(entry.record);
      });
    });
  }
  await forEachLimited(jobs, context.client.concurrency, (job) => job(), signal);
}

/** A file of several objects (or none: an empty file), fetched in order and checked as a whole. */
async function writeFromParts(
  context: RestoreContext, index: SnapshotIndex, entry: Placed & { record: FileRecord }, result: RestoreResult,
  stats: Map<FileRecord, WrittenStat>, counted: (record: EntryRecord) => void, slicer: Slicer, signal?: AbortSignal,
): Promise<void> {
  const { record } = entry;
  while (slicer.due()) await slicer.pass();
  const stat = await writeFileAtomic(entry.abs, record.mode, record.mtimeMs, async (fd) => {
    const hash = contentHasher(index.hash);
    let position = 0;
    for (const [object, offset, length] of record.parts) {
      const key = index.objects[object];
      const bytes = key ? await context.client.get(key, signal) : undefined;
      if (!bytes || offset + length > bytes.length) return false;
      const slice = bytes.subarray(offset, offset + length);
      hash.update(slice);
      writeAll(fd, slice, position);
      position += length;
      while (slicer.due()) await slicer.pass();
    }
    return hash.digest() === record.hash;
  });
  if (!stat) return void result.corrupted.push(entry.label);
  stats.set(record, { size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino, mode: stat.mode & 0o7777 });
  counted(record);
}

/** The restored index as the local cache keeps it: a file's stat only where it was written or found the same. */
function cacheIndex(index: SnapshotIndex, stats: Map<FileRecord, WrittenStat>): SnapshotIndex {
  const roots = index.roots.map((root) => ({
    ...root,
    entries: root.entries.map((record): EntryRecord => {
      if (record.type !== 'file') return record;
      const { ino: _, ...rest } = record;
      const stat = stats.get(record);
      return stat ? { ...rest, size: stat.size, mtimeMs: stat.mtimeMs, mode: stat.mode, ino: stat.ino } : rest;
    }),
  }));
  return { ...index, format: INDEX_FORMAT, roots };
}

/** A relative path of named segments: no empty, `.` or `..` segment, no leading `/`, no NUL. */
function isBelow(rel: Buffer): boolean {
  if (rel.length === 0 || rel.includes(0)) return false;
  return rel.toString('latin1').split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

function isUnder(path: Buffer, dir: Buffer): boolean {
  return path.length > dir.length && path[dir.length] === 0x2f && path.subarray(0, dir.length).equals(dir);
}
