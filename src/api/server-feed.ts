// The server records as GET /servers shows them, kept up to date and serialised once per change,
// so every watch stream shares the same bytes. Woken by the index's events (a status written, a
// manifest read or gone) and by each stats sample (CPU and memory), it compares the record
// without `uptime` (which clients compute from start_time) and tells its listeners what changed.
// GET /servers and GET /servers/{id} answer from it too (list, entryOf): each record's JSON is kept
// split around its `uptime` value, so an answer is the cached text with a fresh uptime spliced in.
// A record is looked at again before it is served when what it was built from is no longer the
// record's (another manifest object, status, spec, metadata or problems, another stats sample):
// a change the controller made without an event yet is never served stale. The unfiltered list
// keeps its assembled parts (list-bytes.ts) and what each record was checked against, so while
// nothing moved an answer is a copy with the uptimes written in; a stats sample that leaves a
// record's figures as they were (an idle editor's) does not build it again.
import type { ServerRecord } from '../index/records.ts';
import type { ServerIndex } from '../index/server-index.ts';
import type { EditorServer } from '../manifests/types.ts';
import type { ProcessStats, StatsSampler } from '../runtime/stats.ts';
import { ListLayout, numberJson, recordsAsBytes, uptimeJson, wholeMs, type RecordsFrame } from './list-bytes.ts';
import { serverView } from './views.ts';

// Assembled lists are list-bytes.ts's; watch streams and tests reach them through the feed.
export { recordsAsBytes, uptimeJson, type RecordsFrame };

export type ServerView = ReturnType<typeof serverView>;

/** One server's record as last sent. */
export interface FeedEntry {
  readonly name: string;
  readonly id: string;
  /** The manifest behind it, for the access policy (its owner). */
  readonly server: EditorServer;
  /** The record as JSON, serialised once when it changed. */
  readonly json: string;
  /** The record without uptime, as JSON: what tells a change (json itself when startMs is undefined: its uptime is 0). */
  readonly key: string;
  /** The JSON before and after the uptime value, json being prefix + uptime + suffix; empty when startMs is undefined. */
  readonly prefix: string;
  readonly suffix: string;
  /** start_time in ms (Date.parse once), for the uptime spliced in; undefined when none. */
  readonly startMs: number | undefined;
  /** prefix and suffix (json when startMs is undefined) as UTF-8, for answers assembled as bytes. */
  readonly bytes: { readonly prefix: Buffer; readonly suffix: Buffer };
}

interface Sources {
  readonly server: EditorServer;
  readonly status: unknown;
  readonly spec: unknown;
  readonly metadata: unknown;
  readonly problems: string[] | undefined;
  readonly stats: ProcessStats | undefined;
  readonly persistence: object | null;
}

/** Each server's persistence state (the same object until it changes), and news of a change. */
export interface PersistenceSource {
  stateOf(name: string): object;
  onChange(listener: (name: string) => void): () => void;
}

const UPTIME = '"uptime":';
const EMPTY = Buffer.alloc(0);

/** The view as JSON, split around its uptime value (same bytes as JSON.stringify(view) once joined). */
function splitJson(view: ServerView): { prefix: string; suffix: string } {
  const head: Record<string, unknown> = {};
  const tail: Record<string, unknown> = {};
  let seen = false;
  for (const [key, value] of Object.entries(view)) {
    if (key === 'uptime') seen = true;
    else (seen ? tail : head)[key] = value;
  }
  const h = JSON.stringify(head);
  const t = JSON.stringify(tail);
  return {
    prefix: h === '{}' ? `{${UPTIME}` : `${h.slice(0, -1)},${UPTIME}`,
    suffix: t === '{}' ? '}' : `,${t.slice(1)}`,
  };
}

/** GET /servers' frame: `[a,b,…]`. */
const LIST_FRAME: RecordsFrame = { open: '[', before: (i) => (i === 0 ? '' : ','), after: '', close: ']' };

/** A record appeared (no before), changed (both), or went (no after). */
export interface FeedChange {
  readonly name: string;
  readonly before?: FeedEntry;
  readonly after?: FeedEntry;
}

/** Whether two samples show the same figures in a record (serverView reads these two of a sample). */
function sameFigures(a: ProcessStats | undefined, b: ProcessStats | undefined): boolean {
  return (a?.cpuPercent ?? 0) === (b?.cpuPercent ?? 0) && (a?.memoryMb ?? 0) === (b?.memoryMb ?? 0);
}

/** What the feed reads of the index: its records and its events. */
export type FeedSource = Pick<ServerIndex, 'records' | 'on' | 'recordChanges'>;

export class ServerFeed {
  readonly #index: FeedSource;
  readonly #stats: StatsSampler;
  readonly #entries = new Map<string, FeedEntry>();
  /** What each entry was last checked against, compared by identity before it is served. */
  readonly #sources = new Map<string, Sources>();
  readonly #listeners = new Set<(change: FeedChange) => void>();
  readonly #onName = (name: string) => this.refresh(name);
  readonly #offIndex: Array<() => void>;
  readonly #offSample: () => void;
  readonly #persistence: PersistenceSource | undefined;
  readonly #offPersistence: () => void;
  /** Counts refresh() calls: while it stays the same, #entries and #sources hold the same objects. */
  #version = 0;
  /**
   * The unfiltered list as last assembled (listBytes): its layout, and each listed record with
   * what its entry was built from, as of the version and the stats sample they were checked at.
   */
  #kept: { layout: ListLayout<FeedEntry>; records: ServerRecord[]; sources: Sources[]; version: number; sample: number; changes: number } | undefined;

  constructor(index: FeedSource, stats: StatsSampler, persistence?: PersistenceSource) {
    this.#index = index;
    this.#stats = stats;
    this.#persistence = persistence;
    // A snapshot or restore changes the record's `persistence` without a status write.
    this.#offPersistence = persistence?.onChange(this.#onName) ?? (() => undefined);
    // 'changed' and 'deleted' come with each status write and removal; 'reconciled' after every
    // reconcile, which may have read a hand-edited spec without writing status.
    this.#offIndex = [
      index.on('changed', this.#onName),
      index.on('deleted', this.#onName),
      index.on('reconciled', ({ name }) => this.refresh(name)),
    ];
    // A sample changes the figures of the editors it sampled, and of those the one before did
    // (stopped since): only theirs are looked at, not every declared server's, and only while a
    // watch stream follows the feed. Otherwise nobody is told, and each entry is brought up to
    // date when it is read (#fresh): a sample every 2 s at rest builds no record.
    let sampled = new Set<string>();
    this.#offSample = stats.onSample(() => {
      const now = new Set(stats.names());
      if (this.#listeners.size > 0) for (const name of new Set([...sampled, ...now])) this.refresh(name);
      sampled = now;
    });
  }

  /** Calls `listener` with every change from now on; returns its removal. */
  subscribe(listener: (change: FeedChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Every record GET /servers would list now, in its order (changes found on the way are sent to
   * the listeners first). Nothing can change between this and a subscribe in the same tick.
   */
  snapshot(): FeedEntry[] {
    const entries: FeedEntry[] = [];
    for (const record of this.#index.records.values()) {
      const entry = this.#fresh(record);
      if (entry) entries.push(entry);
    }
    // Entries of records no longer there go (and their listeners hear of it).
    if (this.#entries.size > entries.length) this.refreshAll();
    return entries;
  }

  /**
   * GET /servers: the JSON array of every record `sees` lets through (all without it), in the
   * index's order, each with a fresh uptime.
   */
  list(sees?: (server: EditorServer) => boolean): string {
    let out = '[';
    const now = Date.now();
    for (const record of this.#index.records.values()) {
      const entry = this.#fresh(record);
      if (!entry || (sees && !sees(record.server!))) continue;
      if (out.length > 1) out += ',';
      out += ServerFeed.current(entry, now);
    }
    return `${out}]`;
  }

  /**
   * The entries GET /servers would list now for `sees` (all without it), in its order: what
   * listBytes and a new watch stream's list are assembled from.
   */
  listed(sees?: (server: EditorServer) => boolean): FeedEntry[] {
    const entries: FeedEntry[] = [];
    for (const record of this.#index.records.values()) {
      const entry = this.#fresh(record);
      if (entry && (!sees || sees(record.server!))) entries.push(entry);
    }
    return entries;
  }

  /**
   * list() as UTF-8 bytes, assembled from each entry's bytes with the fresh uptimes written in:
   * no JSON text is built or encoded per request (GET /servers' fast path; 139 KB at 300 servers).
   */
  listBytes(sees: ((server: EditorServer) => boolean) | undefined, alloc: (length: number) => Buffer): Buffer {
    if (sees) return recordsAsBytes(this.listed(sees), LIST_FRAME, alloc);
    const layout = this.#layout(alloc);
    return layout instanceof ListLayout ? layout.assemble(Date.now(), alloc) : layout;
  }

  /** The unfiltered list as chunks to write together (ListLayout.chunks): what GET /servers' fast path sends. */
  listChunks(alloc: (length: number) => Buffer): { chunks: Uint8Array[]; length: number } | Buffer {
    const layout = this.#layout(alloc);
    return layout instanceof ListLayout ? layout.chunks(Date.now()) : layout;
  }

  /** The unfiltered list's layout, kept or made anew; a Buffer of the list when no layout can be made. */
  #layout(alloc: (length: number) => Buffer): ListLayout<FeedEntry> | Buffer {
    // Unfiltered (locally, and for whoever may see every server): while the records are the ones
    // listed last time and nothing their entries were built from has moved, the text between the
    // uptimes is copied as kept (list-bytes.ts), with no array or string made.
    const kept = this.#kept;
    const sample = this.#stats.generation;
    // The index's count of record changes says none was touched since the last look; without
    // one, or after a change, every record is checked (#unchanged).
    const changes = this.#index.recordChanges?.() ?? Number.NaN;
    if (kept && kept.version === this.#version && typeof sample === 'number' && kept.sample === sample && (kept.changes === changes || this.#unchanged(kept))) {
      kept.changes = changes;
      return kept.layout;
    }
    // Else every record is looked at as listed() does, and what is kept is made anew.
    const entries: FeedEntry[] = [];
    const records: ServerRecord[] = [];
    const sources: Sources[] = [];
    for (const record of this.#index.records.values()) {
      const entry = this.#fresh(record);
      if (!entry) continue;
      entries.push(entry);
      records.push(record);
      sources.push(this.#sources.get(record.name)!);
    }
    if (!ListLayout.usable(entries)) {
      this.#kept = undefined;
      return recordsAsBytes(entries, LIST_FRAME, alloc);
    }
    const same = kept && kept.layout.records.length === entries.length && entries.every((e, i) => kept.layout.matchesAt(i, e));
    const layout = same ? kept.layout : new ListLayout(entries, kept?.layout);
    this.#kept = { layout, records, sources, version: this.#version, sample, changes };
    return layout;
  }

  /**
   * Whether every record is still what `kept` was checked against: the same record objects in
   * the same order, each with the same manifest, status, spec, metadata, problems and persistence
   * (stats: the caller checks that no sample came since), and no other record listed. #fresh would
   * then return each kept entry unchanged: this is its check, without a map lookup per record.
   */
  #unchanged(kept: { records: ServerRecord[]; sources: Sources[] }): boolean {
    const { records, sources } = kept;
    const persistence = this.#persistence;
    let i = 0;
    for (const record of this.#index.records.values()) {
      const server = record.server;
      if (records[i] !== record) {
        // Not listed then (records keep their order): still not to be listed, or something changed.
        if (!server?.metadata.uid) continue;
        return false;
      }
      const from = sources[i];
      if (server !== from.server || !server.metadata.uid || server.status !== from.status || server.spec !== from.spec
        || server.metadata !== from.metadata || record.problems !== from.problems) return false;
      if (persistence && (persistence.stateOf(record.name) ?? null) !== from.persistence) return false;
      i++;
    }
    return i === records.length;
  }

  /** The server's entry as it is now (undefined when it is not listed). */
  entryOf(name: string): FeedEntry | undefined {
    const record = this.#index.records.get(name);
    return record ? this.#fresh(record) : undefined;
  }

  /** The record as it would be listed now: the last serialised one with a fresh uptime. */
  static current(entry: FeedEntry, now = Date.now()): string {
    if (entry.startMs === undefined) return entry.json;
    // As uptimeOf computes it, with start_time parsed once.
    return entry.prefix + uptimeJson(now, entry.startMs) + entry.suffix;
  }

  /** The record's entry, looked at again first when what it was built from changed. */
  #fresh(record: ServerRecord): FeedEntry | undefined {
    const server = record.server;
    if (!server?.metadata.uid) {
      if (this.#entries.has(record.name)) this.refresh(record.name);
      return undefined;
    }
    const entry = this.#entries.get(record.name);
    const from = this.#sources.get(record.name);
    if (entry && from && from.server === server && from.status === server.status && from.spec === server.spec && from.metadata === server.metadata
      && from.problems === record.problems && from.stats === this.#statsOf(record.name, server)
      && from.persistence === this.#persistenceOf(record.name)) return entry;
    this.refresh(record.name);
    return this.#entries.get(record.name);
  }

  #persistenceOf(name: string): object | null {
    return this.#persistence?.stateOf(name) ?? null;
  }

  #statsOf(name: string, server: EditorServer): ProcessStats | undefined {
    return server.status?.runtimeRef ? this.#stats.get(name) : undefined;
  }

  /** Looks at one server again and tells the listeners if its record changed. */
  refresh(name: string): void {
    const record = this.#index.records.get(name);
    const before = this.#entries.get(name);
    // Listed as GET /servers lists: only records with a manifest that was once valid and a uid.
    if (!record?.server?.metadata.uid) {
      if (!before && !this.#sources.has(name)) return;
      this.#version++;
      this.#sources.delete(name);
      if (before) {
        this.#entries.delete(name);
        this.#emit({ name, before });
      }
      return;
    }
    const server = record.server;
    const stats = this.#statsOf(name, server);
    const persistence = this.#persistenceOf(name);
    const last = this.#sources.get(name);
    // Built from the very same objects: nothing to do (and what is kept for the list stays valid).
    if (before && last && last.stats === stats && last.server === server && last.status === server.status && last.spec === server.spec
      && last.metadata === server.metadata && last.problems === record.problems && last.persistence === persistence) return;
    this.#version++;
    // A new stats sample with the same figures (an idle editor's, most of them): the record is
    // what it was, so it is not built again. Everything else it is built from is the same object.
    if (before && last && last.stats !== stats && sameFigures(last.stats, stats) && last.server === server && last.status === server.status
      && last.spec === server.spec && last.metadata === server.metadata && last.problems === record.problems && last.persistence === persistence) {
      this.#sources.set(name, { ...last, stats });
      return;
    }
    const from: Sources = { server, status: server.status, spec: server.spec, metadata: server.metadata, problems: record.problems, stats, persistence };
    const view = serverView(record, stats, persistence);
    const startMs = view.start_time ? Date.parse(view.start_time) : undefined;
    // A record that did not start (most of them) keeps one flat string, no halves: 1.5 KB less a server.
    const { prefix, suffix } = startMs === undefined ? { prefix: '', suffix: '' } : splitJson(view);
    const json = startMs === undefined ? JSON.stringify(view) : prefix + numberJson(view.uptime) + suffix;
    // Both halves with the uptime left out: the record without it.
    const key = startMs === undefined ? json : prefix + suffix;
    this.#sources.set(name, from);
    if (before?.key === key) return;
    const bytes = startMs === undefined
      ? { prefix: Buffer.from(json), suffix: EMPTY }
      : { prefix: Buffer.from(prefix), suffix: Buffer.from(suffix) };
    const after: FeedEntry = { name, id: server.metadata.uid!, server, json, key, prefix, suffix, startMs, bytes };
    this.#entries.set(name, after);
    this.#emit({ name, before, after });
  }

  refreshAll(): void {
    for (const name of new Set([...this.#index.records.keys(), ...this.#entries.keys()])) this.refresh(name);
  }

  dispose(): void {
    for (const off of this.#offIndex.splice(0)) off();
    this.#offSample();
    this.#offPersistence();
    this.#listeners.clear();
  }

  #emit(change: FeedChange): void {
    for (const listener of this.#listeners) listener(change);
  }
}
