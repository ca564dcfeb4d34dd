// The records of a new snapshot's index, made from the walk and the previous index: an entry
// whose stat is as last time is the previous record itself (not a copy: its serialised form is
// reused, see index-file.ts), a file that changed is a new record to read. Also the objects
// table, the content stored already (by hash), and whether anything changed at all.
import type { Stored } from './capture.ts';
import { HASH_ALGORITHM } from './hash.ts';
import { namedFields, pathKey, targetFields, type EntryRecord, type FileRecord, type Part, type RootRecord, type SnapshotIndex } from './index-file.ts';
import type { PartRef } from './packs.ts';
import type { WalkedFile, WalkedRoot } from './walk.ts';

/** What a snapshot takes from the previous index: its records by path (per root), its content by hash, its objects table. */
export interface BaseView {
  previous: Map<RootRecord['id'], Map<string, EntryRecord>>;
  /** Whether its files' hashes are this engine's (else an older format's: every file is read again). */
  reusable: boolean;
  /** The previous index's content by hash (empty when not reusable). */
  content: Map<string, Stored>;
  objects: ReadonlyArray<string | null>;
}

// Indexes never change once made: their maps are made once (a snapshot soon after another uses the same index).
const views = new WeakMap<SnapshotIndex, BaseView>();

export function baseView(base: SnapshotIndex | undefined): BaseView {
  if (!base) return { previous: new Map(), reusable: false, content: new Map(), objects: [] };
  let view = views.get(base);
  if (view) return view;
  const reusable = base.hash === HASH_ALGORITHM;
  view = { previous: new Map(), reusable, content: new Map(), objects: reusable ? base.objects : [] };
  for (const root of base.roots) {
    const byPath = new Map<string, EntryRecord>();
    view.previous.set(root.id, byPath);
    for (const entry of root.entries) {
      byPath.set(pathKey(entry), entry);
      if (reusable && entry.type === 'file' && !view.content.has(entry.hash)) view.content.set(entry.hash, { parts: entry.parts });
    }
  }
  views.set(base, view);
  return view;
}

/** Content stored already: the previous index's, and what this snapshot adds (kept apart: the previous index's map is shared). */
export class KnownContent {
  private readonly base: ReadonlyMap<string, Stored>;
  private readonly added = new Map<string, Stored>();

  constructor(base: ReadonlyMap<string, Stored>) {
    this.base = base;
  }

  get(hash: string): Stored | undefined {
    return this.added.get(hash) ?? this.base.get(hash);
  }

  set(hash: string, stored: Stored): void {
    this.added.set(hash, stored);
  }
}

export interface Draft {
  id: RootRecord['id'];
  absent: boolean;
  entries: EntryRecord[];
}

/** The records of every walked entry; files to read are added to `toRead` (their records filled in once read). */
export function draftRecords(
  walked: readonly WalkedRoot[], view: BaseView, toRead: Array<{ record: FileRecord; file: WalkedFile; root: RootRecord['id'] }>,
): Draft[] {
  return walked.map((root) => {
    const before = view.previous.get(root.root.id);
    const entries = root.entries.map((entry): EntryRecord => {
      const named = typeof entry.rel === 'string' ? undefined : namedFields(entry.rel);
      const old = before?.get(named ? pathKey(named) : (entry.rel as string));
      if (entry.kind === 'dir') {
        if (old?.type === 'dir' && old.mode === entry.mode && old.mtimeMs === entry.mtimeMs) return old;
        return { type: 'dir', ...(named ?? { path: entry.rel as string }), mtimeMs: entry.mtimeMs, mode: entry.mode };
      }
      if (entry.kind === 'link') {
        const target = targetFields(entry.target);
        if (old?.type === 'link' && old.mtimeMs === entry.mtimeMs && old.target === target.target && old.targetBase64 === target.targetBase64) return old;
        return { type: 'link', ...(named ?? { path: entry.rel as string }), mtimeMs: entry.mtimeMs, ...target };
      }
      if (view.reusable && old?.type === 'file' && old.ino !== undefined && old.ino === entry.ino && old.size === entry.size && old.mtimeMs === entry.mtimeMs && old.mode === entry.mode) {
        return old;
      }
      const record: FileRecord = { type: 'file', ...(named ?? { path: entry.rel as string }), mtimeMs: entry.mtimeMs, mode: entry.mode, size: entry.size, hash: '', parts: [] };
      toRead.push({ record, file: entry, root: root.root.id });
      return record;
    });
    return { id: root.root.id, absent: root.absent, entries };
  });
}

/**
 * The new index's objects table: the previous one's (so the parts of files kept from it stay as
 * they are, and so do their records), then the objects this snapshot wrote, with the records
 * referring to them given their parts. A slot no part refers to any more is emptied (null), so
 * garbage collection may remove its object; once most slots are empty the table is compacted
 * and the records concerned replaced by renumbered copies (the previous index's are never changed).
 */
export function objectsTable(baseObjects: ReadonlyArray<string | null>, roots: RootRecord[], written: Map<FileRecord, PartRef[]>): Array<string | null> {
  const objects = [...baseObjects];
  const ids = new Map<string, number>();
  for (const [record, refs] of written) {
    record.parts = refs.map((ref): Part => {
      let id = ids.get(ref.object.key);
      if (id === undefined) ids.set(ref.object.key, id = objects.push(ref.object.key) - 1);
      return [id, ref.offset, ref.length];
    });
  }
  const used = new Uint8Array(objects.length);
  for (const root of roots) for (const entry of root.entries) if (entry.type === 'file') for (const part of entry.parts) used[part[0]] = 1;
  let empty = 0;
  objects.forEach((key, id) => {
    if (!used[id]) {
      objects[id] = null;
      empty++;
    }
  });
  while (objects.length > 0 && objects.at(-1) === null) {
    objects.pop();
    empty--;
  }
  if (empty * 2 <= objects.length) return objects;
  const renumbered: number[] = [];
  const kept: string[] = [];
  objects.forEach((key, id) => {
    if (key !== null) renumbered[id] = kept.push(key) - 1;
  });
  for (const root of roots) {
    root.entries = root.entries.map((entry) => (entry.type !== 'file' ? entry : { ...entry, parts: entry.parts.map(([id, offset, length]): Part => [renumbered[id], offset, length]) }));
  }
  return kept;
}

/** Whether a snapshot would keep nothing new (of the same server, by uid): same manifest, status, extensions, and entries (path, type, mode, content, link target). */
export function sameContent(base: SnapshotIndex, next: Omit<SnapshotIndex, 'format' | 'hash' | 'info' | 'exclude'>): boolean {
  if (base.manifestText !== next.manifestText) return false;
  if (JSON.stringify(base.status ?? null) !== JSON.stringify(next.status)) return false;
  if (JSON.stringify(base.extensions) !== JSON.stringify(next.extensions)) return false;
  if (base.hash !== HASH_ALGORITHM || base.roots.length !== next.roots.length) return false;
  return base.roots.every((root, r) => {
    const other = next.roots[r];
    if (root.id !== other.id || Boolean(root.absent) !== Boolean(other.absent) || root.entries.length !== other.entries.length) return false;
    return root.entries.every((entry, i) => {
      const o = other.entries[i];
      if (entry === o) return true;
      if (entry.type !== o.type || entry.path !== o.path || entry.pathBase64 !== o.pathBase64) return false;
      if (entry.type === 'link') return o.type === 'link' && entry.target === o.target && entry.targetBase64 === o.targetBase64;
      if (entry.mode !== (o as typeof entry).mode) return false;
      return entry.type === 'dir' || (o.type === 'file' && entry.hash === o.hash);
    });
  });
}
