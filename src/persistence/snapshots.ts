// Takes one incremental snapshot of a server: walk its roots, read only the files whose stat
// differs from the last index, store only content not stored before, and commit by writing
// the index last. Until that write the previous snapshot stays current; objects written before
// a crash are garbage for collectGarbage.
import type { Catalog } from './catalog.ts';
import { captureFile, ScratchBuffers, type CaptureOptions } from './capture.ts';
import { excludeMatcher } from './excludes.ts';
import {
  displayPath, INDEX_FORMAT, namedFields, pathKey, serializeIndex, targetFields,
  type EntryRecord, type FileRecord, type Part, type RootRecord, type SnapshotIndex,
} from './index-file.ts';
import { assertServerName, indexKey, nextSnapshotId } from './keys.ts';
import { forEachLimited } from './limit.ts';
import type { IndexCache } from './local-cache.ts';
import { PackWriter, type PartRef, type StoredObject } from './packs.ts';
import type { AfterRead } from './read-file.ts';
import { Slicer } from './slices.ts';
import { Uploads, type StoreClient } from './store-client.ts';
import { WorkspaceTooLargeError, type SkippedEntry, type SnapshotInfo, type SnapshotSources } from './types.ts';
import { walkRoot, type WalkedFile } from './walk.ts';

export interface SnapshotSettings {
  packBytes: number;
  smallFileBytes: number;
  chunkBytes: number;
  keepSnapshots: number;
  readConcurrency: number;
  readAttempts: number;
  /** Files modified less than this long before a snapshot are read again by the next one, whatever their stat. */
  racyMs: number;
  now: () => number;
  log: (message: string) => void;
  afterRead?: AfterRead;
}

export interface SnapshotContext {
  client: StoreClient;
  catalog: Catalog;
  cache: IndexCache;
  settings: SnapshotSettings;
}

export async function takeSnapshot(
  context: SnapshotContext, sources: SnapshotSources, reason: string, signal?: AbortSignal,
): Promise<{ snapshot: SnapshotInfo; unchanged: boolean }> {
  const { client, catalog, cache, settings } = context;
  const { name } = sources;
  assertServerName(name);
  const started = performance.now();
  const createdAt = settings.now();
  const racyFrom = Date.now() - settings.racyMs;

  const { ids } = await catalog.server(name, signal);
  const base = ids.length > 0 ? await loadBase(context, name, ids.at(-1)!, signal) : undefined;

  const { previous, known, partsOf } = baseMaps(base);
  // An entry the last snapshot kept under the same patterns is not excluded now either: only new paths are matched.
  const samePatterns = base !== undefined && JSON.stringify(base.exclude) === JSON.stringify(sources.exclude);
  const matcher = excludeMatcher(sources.exclude);
  const skipped: SkippedEntry[] = [];
  const walked = await Promise.all(sources.roots.map((root) => {
    const keptBefore = samePatterns ? previous.get(root.id) : undefined;
    const kept = (rel: string, isDir: boolean) => {
      const entry = keptBefore?.get(rel);
      return entry !== undefined && (entry.type === 'dir') === isDir;
    };
    const excludes = (rel: string, isDir: boolean) => !kept(rel, isDir) && matcher.excludes(rel, isDir);
    return walkRoot(root, { excludes }, skipped, signal);
  }));
  const total = walked.reduce((sum, root) => sum + root.entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0), 0);
  if (sources.maxBytes !== undefined && total > sources.maxBytes) throw new WorkspaceTooLargeError(name, total, sources.maxBytes);

  const uploads = new Uploads(client, signal);
  const packs = new PackWriter(uploads, settings.packBytes, settings.now);
  const refs = new Map<FileRecord, PartRef[]>();
  const toRead: Array<{ record: FileRecord; file: WalkedFile; root: RootRecord['id'] }> = [];
  const drafts = walked.map((root) => {
    const before = previous.get(root.root.id);
    const entries = root.entries.map((entry): EntryRecord => {
      const named = { ...namedFields(entry.rel, entry.text), mtimeMs: entry.mtimeMs };
      if (entry.kind === 'dir') return { type: 'dir', ...named, mode: entry.mode };
      if (entry.kind === 'link') return { type: 'link', ...named, ...targetFields(entry.target) };
      const record: FileRecord = { type: 'file', ...named, mode: entry.mode, size: entry.size, sha256: '', parts: [] };
      const old = before?.get(pathKey(named));
      if (old?.type === 'file' && old.ino !== undefined && old.ino === entry.ino && old.size === entry.size && old.mtimeMs === entry.mtimeMs && old.mode === entry.mode) {
        record.sha256 = old.sha256;
        record.ino = old.ino;
        refs.set(record, partsOf(old));
      } else {
        toRead.push({ record, file: entry, root: root.root.id });
      }
      return record;
    });
    return { id: root.root.id, absent: root.absent, entries };
  });

  // Read what changed, a few files at once; packs upload as they fill, while reading goes on.
  const captureOptions: CaptureOptions = {
    packs, known, racyFrom,
    slicer: new Slicer(),
    scratch: new ScratchBuffers(settings.smallFileBytes),
    smallFileBytes: settings.smallFileBytes,
    chunkBytes: settings.chunkBytes,
    attempts: settings.readAttempts,
    afterRead: settings.afterRead,
  };
  const dropped = new Set<EntryRecord>();
  let failure: { error: unknown } | undefined;
  try {
    await forEachLimited(toRead, settings.readConcurrency, async ({ record, file, root }) => {
      const capture = await captureFile(file, captureOptions);
      if (capture.kind !== 'file') {
        dropped.add(record);
        if (capture.kind === 'unreadable') skipped.push({ root, path: displayPath(file.rel), reason: 'unreadable' });
        return;
      }
      Object.assign(record, { sha256: capture.sha256, size: capture.size, mode: capture.mode, mtimeMs: capture.mtimeMs });
      if (capture.ino !== undefined) record.ino = capture.ino;
      refs.set(record, capture.parts);
      if (capture.changedWhileRead) skipped.push({ root, path: displayPath(file.rel), reason: 'changed-while-read' });
    }, signal);
    await packs.flush();
  } catch (error) {
    failure = { error };
  }
  await uploads.finish().catch((error) => void (failure ??= { error }));
  if (failure) throw failure.error;

  const objects: string[] = [];
  const objectIds = new Map<string, number>();
  const roots: RootRecord[] = drafts.map(({ id, absent, entries }) => ({
    id,
    ...(absent && { absent: true }),
    entries: entries.filter((entry) => !dropped.has(entry)).map((entry) => {
      if (entry.type !== 'file') return entry;
      entry.parts = refs.get(entry)!.map((ref): Part => {
        let objectId = objectIds.get(ref.object.key);
        if (objectId === undefined) objectIds.set(ref.object.key, objectId = objects.push(ref.object.key) - 1);
        return [objectId, ref.offset, ref.length];
      });
      return entry;
    }),
  }));
  const content = {
    manifestText: sources.manifestText,
    status: sources.status ?? null,
    extensions: [...sources.extensions],
    exclude: [...sources.exclude],
    objects,
    roots,
  };

  if (base && base.info.uid === sources.uid && sameContent(base, content)) {
    // Nothing to keep; remember the files' new stat so the next snapshot need not read them.
    await cache.write(name, serializeIndex({ format: INDEX_FORMAT, info: base.info, ...content }));
    return { snapshot: base.info, unchanged: true };
  }

  const files = roots.flatMap((root) => root.entries.filter((entry) => entry.type !== 'dir'));
  const info: SnapshotInfo = {
    id: nextSnapshotId(createdAt, ids.at(-1)),
    name,
    uid: sources.uid,
    createdAt: new Date(createdAt).toISOString(),
    reason,
    files: files.length,
    bytes: files.reduce((sum, entry) => sum + (entry.type === 'file' ? entry.size : 0), 0),
    uploadedBytes: uploads.uploadedBytes,
    skipped,
    durationMs: 0,
  };
  const index: SnapshotIndex = { format: INDEX_FORMAT, info, ...content };
  info.durationMs = Math.round(performance.now() - started);
  signal?.throwIfAborted();
  const bytes = serializeIndex(index);
  await client.put(indexKey(name, info.id), bytes, signal); // the commit
  catalog.remember(name, index);
  await cache.write(name, bytes);
  await applyRetention(context, name, [...ids, info.id]);
  return { snapshot: info, unchanged: false };
}

/** The previous index by path (per root), its content by sha256, and its parts as references. */
function baseMaps(base: SnapshotIndex | undefined) {
  const objects: StoredObject[] = (base?.objects ?? []).map((key) => ({ key }));
  const partsOf = (record: FileRecord): PartRef[] => record.parts.map(([object, offset, length]) => ({ object: objects[object], offset, length }));
  const previous = new Map<RootRecord['id'], Map<string, EntryRecord>>();
  const known = new Map<string, PartRef[]>();
  for (const root of base?.roots ?? []) {
    const byPath = new Map<string, EntryRecord>();
    previous.set(root.id, byPath);
    for (const entry of root.entries) {
      byPath.set(pathKey(entry), entry);
      if (entry.type === 'file' && !known.has(entry.sha256)) known.set(entry.sha256, partsOf(entry));
    }
  }
  return { previous, known, partsOf };
}

/** Whether a snapshot would keep nothing new (of the same server, by uid): same manifest, status, extensions, and entries (path, type, mode, content, link target). */
function sameContent(base: SnapshotIndex, next: Omit<SnapshotIndex, 'format' | 'info' | 'exclude'>): boolean {
  if (base.manifestText !== next.manifestText) return false;
  if (JSON.stringify(base.status ?? null) !== JSON.stringify(next.status)) return false;
  if (JSON.stringify(base.extensions) !== JSON.stringify(next.extensions)) return false;
  if (base.roots.length !== next.roots.length) return false;
  return base.roots.every((root, r) => {
    const other = next.roots[r];
    if (root.id !== other.id || Boolean(root.absent) !== Boolean(other.absent) || root.entries.length !== other.entries.length) return false;
    return root.entries.every((entry, i) => {
      const o = other.entries[i];
      if (entry.type !== o.type || entry.path !== o.path || entry.pathBase64 !== o.pathBase64) return false;
      if (entry.type === 'link') return o.type === 'link' && entry.target === o.target && entry.targetBase64 === o.targetBase64;
      if (entry.mode !== (o as typeof entry).mode) return false;
      return entry.type === 'dir' || (o.type === 'file' && entry.sha256 === o.sha256);
    });
  });
}

/** Keeps the newest `keepSnapshots` indexes; a failure here only leaves an old snapshot longer. */
async function applyRetention(context: SnapshotContext, name: string, ids: string[]): Promise<void> {
  const excess = ids.slice(0, Math.max(0, ids.length - Math.max(1, context.settings.keepSnapshots)));
  await Promise.all(excess.map(async (id) => {
    try {
      await context.client.delete(indexKey(name, id));
      context.catalog.forget(name, id);
    } catch (error) {
      context.settings.log(`could not remove the old snapshot ${id} of ${name}: ${(error as Error).message}`);
    }
  }));
}

/** The previous snapshot's index: the local copy when it is that snapshot's, else the store's. */
async function loadBase(context: SnapshotContext, name: string, latestId: string, signal?: AbortSignal): Promise<SnapshotIndex | undefined> {
  const cached = await context.cache.read(name);
  if (cached?.info.id === latestId) return cached;
  try {
    return await context.catalog.readIndex(name, latestId, signal);
  } catch (error) {
    context.settings.log(`snapshot of ${name} reads every file again: ${(error as Error).message}`);
    return undefined;
  }
}
