// The server records as GET /servers shows them, kept up to date and serialised once per change,
// so every watch stream shares the same bytes. Woken by the reconciler (a status written, a
// manifest read or gone) and by each stats sample (CPU and memory), it compares the record
// without `uptime` (which clients compute from start_time) and tells its listeners what changed.
import type { EventEmitter } from 'node:events';
import type { Reconciler } from '../controller/reconciler.ts';
import type { EditorServer } from '../manifests/types.ts';
import type { StatsSampler } from '../runtime/stats.ts';
import { serverView, uptimeOf } from './views.ts';

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
}

/** A record appeared (no before), changed (both), or went (no after). */
export interface FeedChange {
  readonly name: string;
  readonly before?: FeedEntry;
  readonly after?: FeedEntry;
}

/** What the feed reads of the reconciler: its records and its events. */
export type FeedSource = Pick<Reconciler, 'records'> & Pick<EventEmitter, 'on' | 'off'>;

export class ServerFeed {
  readonly #reconciler: FeedSource;
  readonly #stats: StatsSampler;
  readonly #entries = new Map<string, FeedEntry>();
  readonly #listeners = new Set<(change: FeedChange) => void>();
  readonly #onName = (name: string) => this.refresh(name);
  readonly #offSample: () => void;

  constructor(reconciler: FeedSource, stats: StatsSampler) {
    this.#reconciler = reconciler;
    this.#stats = stats;
    // 'changed' and 'deleted' come with each status write and removal; 'reconciled' after every
    // reconcile, which may have read a hand-edited spec without writing status.
    for (const event of ['changed', 'deleted', 'reconciled']) reconciler.on(event, this.#onName);
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
    this.refreshAll();
    return [...this.#reconciler.records.keys()].flatMap((name) => this.#entries.get(name) ?? []);
  }

  /** The record as it would be listed now: the last serialised one with a fresh uptime. */
  static current(entry: FeedEntry): string {
    if (entry.view.start_time === null) return entry.json;
    return JSON.stringify({ ...entry.view, uptime: uptimeOf(entry.view.start_time) });
  }

  /** Looks at one server again and tells the listeners if its record changed. */
  refresh(name: string): void {
    const record = this.#reconciler.records.get(name);
    const before = this.#entries.get(name);
    // Listed as GET /servers lists: only records with a manifest that was once valid and a uid.
    if (!record?.server?.metadata.uid) {
      if (before) {
        this.#entries.delete(name);
        this.#emit({ name, before });
      }
      return;
    }
    const view = serverView(record, record.server.status?.pid ? this.#stats.get(name) : undefined);
    const { uptime: _uptime, ...rest } = view;
    const key = JSON.stringify(rest);
    if (before?.key === key) return;
    const after: FeedEntry = { name, id: record.server.metadata.uid, server: record.server, view, json: JSON.stringify(view), key };
    this.#entries.set(name, after);
    this.#emit({ name, before, after });
  }

  refreshAll(): void {
    for (const name of new Set([...this.#reconciler.records.keys(), ...this.#entries.keys()])) this.refresh(name);
  }

  dispose(): void {
    for (const event of ['changed', 'deleted', 'reconciled']) this.#reconciler.off(event, this.#onName);
    this.#offSample();
    this.#listeners.clear();
  }

  #emit(change: FeedChange): void {
    for (const listener of this.#listeners) listener(change);
  }
}
