// The server records as GET /servers shows them, kept up to date and serialised once per change,
// so every watch stream shares the same bytes. Woken by the index's events (a status written, a
// manifest read or gone) and by each stats sample (CPU and memory), it compares the record
// without `uptime` (which clients compute from start_time) and tells its listeners what changed.
// GET /servers and GET /servers/{id} answer from it too (list, entryOf): each record's JSON is kept
// split around its `uptime` value, so an answer is the cached text with a fresh uptime spliced in.
// A record is looked at again before it is served when what it was built from is no longer the
// record's (another manifest object, status, spec, metadata or problems, another stats sample):
// a change the controller made without an event yet is never served stale.
import type { ServerRecord } from '../index/records.ts';
import type { ServerIndex } from '../index/server-index.ts';
import type { EditorServer } from '../manifests/types.ts';
import type { ProcessStats, StatsSampler } from '../runtime/stats.ts';
import { serverView } from './views.ts';

export type ServerView = ReturnType<typeof serverView>;

/** One server's record as last sent. */
export interface FeedEntry {
  readonly name: string;
  readonly id: string;
  /** The manifest behind it, for the access policy (its owner). */
  readonly server: EditorServer;
  readonly view: ServerView;
  /** The record as JSON, serialised once when it changed. */
  readonly json: string;
  /** The record without uptime, as JSON: what tells a change. */
  readonly key: string;
  /** The JSON before and after the uptime value: json is prefix + uptime + suffix. */
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

function numberJson(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/** A record's uptime at `now` as JSON, as uptimeOf computes it (start_time parsed once into startMs). */
export function uptimeJson(now: number, startMs: number): string {
  return numberJson(Math.max(0, (now - startMs) / 1000));
}

/** What surrounds the records in an answer assembled by recordsAsBytes: ASCII text only. */
export interface RecordsFrame {
  open: string;
  /** Before the i-th record. */
  before: (i: number) => string;
  /** After each record. */
  after: string;
  close: string;
}

/**
 * The entries' records as UTF-8 with their uptimes at this moment, framed by `frame`, written
 * into a buffer of exactly the length from `alloc`.
 */
export function recordsAsBytes(entries: FeedEntry[], frame: RecordsFrame, alloc: (length: number) => Buffer): Buffer {
  const now = Date.now();
  // Digits, a point, e, + or -: one byte each, like all the frame's text.
  const uptimes = entries.map((e) => (e.startMs === undefined ? '' : uptimeJson(now, e.startMs)));
  const befores = entries.map((_, i) => frame.before(i));
  let length = frame.open.length + frame.close.length + entries.length * frame.after.length;
  entries.forEach((e, i) => {
    length += befores[i].length + e.bytes.prefix.length + uptimes[i].length + e.bytes.suffix.length;
  });
  const out = alloc(length);
  let at = out.write(frame.open, 0, 'latin1');
  entries.forEach((e, i) => {
    at += out.write(befores[i], at, 'latin1');
    at += e.bytes.prefix.copy(out, at);
    at += out.write(uptimes[i], at, 'latin1');
    at += e.bytes.suffix.copy(out, at);
    at += out.write(frame.after, at, 'latin1');
  });
  out.write(frame.close, at, 'latin1');
  return out;
}

/** A record appeared (no before), changed (both), or went (no after). */
export interface FeedChange {
  readonly name: string;
  readonly before?: FeedEntry;
  readonly after?: FeedEntry;
}

/** What the feed reads of the index: its records and its events. */
export type FeedSource = Pick<ServerIndex, 'records' | 'on'>;

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
    this.#offSample = stats.onSample(() => this.refreshAll());
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
    return recordsAsBytes(this.listed(sees), { open: '[', before: (i) => (i === 0 ? '' : ','), after: '', close: ']' }, alloc);
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
    return server.status?.pid ? this.#stats.get(name) : undefined;
  }

  /** Looks at one server again and tells the listeners if its record changed. */
  refresh(name: string): void {
    const record = this.#index.records.get(name);
    const before = this.#entries.get(name);
    // Listed as GET /servers lists: only records with a manifest that was once valid and a uid.
    if (!record?.server?.metadata.uid) {
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
    const from: Sources = { server, status: server.status, spec: server.spec, metadata: server.metadata, problems: record.problems, stats, persistence };
    const view = serverView(record, stats, persistence);
    const { prefix, suffix } = splitJson(view);
    // Both halves with the uptime left out: the record without it.
    const key = prefix + suffix;
    this.#sources.set(name, from);
    if (before?.key === key) return;
    const json = prefix + numberJson(view.uptime) + suffix;
    const startMs = view.start_time ? Date.parse(view.start_time) : undefined;
    const bytes = startMs === undefined
      ? { prefix: Buffer.from(json), suffix: EMPTY }
      : { prefix: Buffer.from(prefix), suffix: Buffer.from(suffix) };
    const after: FeedEntry = { name, id: server.metadata.uid!, server, view, json, key, prefix, suffix, startMs, bytes };
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
