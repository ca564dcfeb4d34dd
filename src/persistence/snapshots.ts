// Takes one incremental snapshot of a server: walk its roots, read only the files whose stat
// differs from the last index, store only content not stored before, and commit by writing
// the index last. Until that write the previous snapshot stays current; objects written before
// a crash are garbage for collectGarbage.
import type { Catalog } from './catalog.ts';
import { captureFiles, type CaptureOptions } from './capture.ts';
import { excludeMatcher } from './excludes.ts';
import { HASH_ALGORITHM } from './hash.ts';
import { displayPath, INDEX_FORMAT, serializeIndex, type EntryRecord, type FileRecord, type RootRecord, type SnapshotIndex } from './index-file.ts';
import { assertServerName, indexKey, nextSnapshotId } from './keys.ts';
import type { Journals } from './journal.ts';
import type { IndexCache } from './local-cache.ts';
import { PackWriter, type PartRef } from './packs.ts';
import type { AfterRead } from './read-file.ts';
import { Slicer } from './slices.ts';
import { baseView, draftRecords, KnownContent, objectsTable, sameContent } from './snapshot-records.ts';
import { Uploads, type StoreClient } from './store-client.ts';
import { WorkspaceTooLargeError, type SkippedEntry, type SnapshotInfo, type SnapshotSources } from './types.ts';
import { walkRoot, type WalkedFile } from './walk.ts';
import type { WorkPool } from './work-pool.ts';

export interface SnapshotSettings {
  packBytes: number;
  smallFileBytes: number;
  chunkBytes: number;
  keepSnapshots: number;
  readAttempts: number;
  /** Reads and hashes in worker threads when the files to read add up to this many bytes or more. */
  parallelMinBytes: number;
  pool: () => WorkPool;
  /** Files modified less than this long before a snapshot are read again by the next one, whatever their stat. */
  racyMs: number;
  now: () => number;
  log: (message: string) => void;
  afterRead?: AfterRead;
}

export interface SnapshotContext {
  client: StoreClient;
  /** Change journals of the roots of running servers; undefined: every snapshot walks every folder. */
  journals?: Journals;
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

  const view = baseView(base);
  // An entry the last snapshot kept under the same patterns is not excluded now either: only new paths are matched.
  const samePatterns = base !== undefined && JSON.stringify(base.exclude) === JSON.stringify(sources.exclude);
  const matcher = excludeMatcher(sources.exclude);
  const skipped: SkippedEntry[] = [];
  const walked = await Promise.all(sources.roots.map((root) => {
    const keptBefore = samePatterns ? view.previous.get(root.id) : undefined;
    const excludes = (rel: string, isDir: boolean) => {
      const entry = keptBefore?.get(rel);
      return !(entry !== undefined && (entry.type === 'dir') === isDir) && matcher.excludes(rel, isDir);
    };
    return walkRoot(root, { excludes }, skipped, signal, context.journals?.of(name, root, sources.exclude, sources.watch === true));
  }));
  if (context.journals) {
    context.journals.explain(name);
    if (!sources.watch) context.journals.forget(name);
  }
  const total = walked.reduce((sum, root) => sum + root.entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0), 0);
  if (sources.maxBytes !== undefined && total > sources.maxBytes) throw new WorkspaceTooLargeError(name, total, sources.maxBytes);

  // Entries as records; a file whose (size, mtime, inode, mode) is as last time keeps its record, the others are read.
  const toRead: Array<{ record: FileRecord; file: WalkedFile; root: RootRecord['id'] }> = [];
  const drafts = draftRecords(walked, view, toRead);

  // Read what changed; packs upload as they fill, while reading goes on.
  const uploads = new Uploads(client, signal);
  const packs = new PackWriter(uploads, settings.packBytes, settings.now);
  const readBytes = toRead.reduce((sum, { file }) => sum + Math.min(file.size, settings.chunkBytes), 0);
  const captureOptions: CaptureOptions = {
    packs, known: new KnownContent(view.content), racyFrom,
    slicer: new Slicer(),
    packBytes: settings.packBytes,
    smallFileBytes: settings.smallFileBytes,
    chunkBytes: settings.chunkBytes,
    attempts: settings.readAttempts,
    afterRead: settings.afterRead,
    // The test seam runs on this thread only.
    pool: !settings.afterRead && settings.pool().wants(readBytes, settings.parallelMinBytes) ? settings.pool() : undefined,
    log: settings.log,
  };
  const dropped = new Set<EntryRecord>();
  const written = new Map<FileRecord, PartRef[]>();
  let failure: { error: unknown } | undefined;
  try {
    await captureFiles(toRead.map(({ file }) => file), captureOptions, (index, capture) => {
      const { record, file, root } = toRead[index];
      if (capture.kind !== 'file') {
        dropped.add(record);
        if (capture.kind === 'unreadable') skipped.push({ root, path: displayPath(file.rel), reason: 'unreadable' });
        return;
      }
      Object.assign(record, { hash: capture.hash, size: capture.size, mode: capture.mode, mtimeMs: capture.mtimeMs });
      if (capture.ino !== undefined) record.ino = capture.ino;
      if ('parts' in capture.stored) record.parts = capture.stored.parts;
      else written.set(record, capture.stored.refs);
      if (capture.changedWhileRead) skipped.push({ root, path: displayPath(file.rel), reason: 'changed-while-read' });
    }, signal);
    await packs.flush();
  } catch (error) {
    failure = { error };
  }
  if (failure) {
    await uploads.finish().catch(() => undefined);
    throw failure.error;
  }
  // Every object is keyed now; the index is made and prepared while they are still being stored
  // and flushed, and committed only once they are (a failure of one fails the snapshot).
  const stored = uploads.finish();
  stored.catch(() => undefined);

  const roots: RootRecord[] = drafts.map(({ id, absent, entries }) => ({
    id,
    ...(absent && { absent: true }),
    entries: dropped.size === 0 ? entries : entries.filter((entry) => !dropped.has(entry)),
  }));
  const content = {
    manifestText: sources.manifestText,
    status: sources.status ?? null,
    extensions: [...sources.extensions],
    exclude: [...sources.exclude],
    objects: objectsTable(view.objects, roots, written),
    roots,
  };

  if (base && base.info.uid === sources.uid && sameContent(base, content)) {
    await stored;
    // Nothing to keep; remember the files' new stat so the next snapshot need not read them.
    await cache.write(name, { format: INDEX_FORMAT, hash: HASH_ALGORITHM, info: base.info, ...content });
    return { snapshot: base.info, unchanged: true };
  }

  let files = 0;
  let keptBytes = 0;
  for (const root of roots) {
    for (const entry of root.entries) {
      if (entry.type === 'dir') continue;
      files++;
      if (entry.type === 'file') keptBytes += entry.size;
    }
  }
  const info: SnapshotInfo = {
    id: nextSnapshotId(createdAt, ids.at(-1)),
    name,
    uid: sources.uid,
    createdAt: new Date(createdAt).toISOString(),
    reason,
    files,
    bytes: keptBytes,
    uploadedBytes: uploads.submittedBytes,
    skipped,
    durationMs: 0,
  };
  const index: SnapshotIndex = { format: INDEX_FORMAT, hash: HASH_ALGORITHM, info, ...content };
  info.durationMs = Math.round(performance.now() - started);
  signal?.throwIfAborted();
  const bytes = serializeIndex(index);
  // The commit, once the objects are stored; the local copy is written meanwhile (it is used only once its id is the store's latest).
  await Promise.all([client.put(indexKey(name, info.id), bytes, signal, { after: stored }), cache.write(name, index, bytes)]);
  catalog.remember(name, index);
  await applyRetention(context, name, [...ids, info.id]);
  return { snapshot: info, unchanged: false };
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
