// A change journal of one snapshot root, so an incremental snapshot costs what changed rather
// than the size of the tree: an inotify watch (fs.watch) on every folder a walk keeps, placed
// before the folder is listed, notes the names that changed in it. The next walk takes the last
// walk's entries as they were and reads again (lstat) only the noted names, walking afresh any
// folder among them; what it finds becomes the journal's new base (patchWalk in walk.ts).
//
// It is used only while it can be sure it saw every change. Anything that makes it unsure sends
// the next snapshot back to a full walk, which places the watches again:
// - a watcher's error, or a watch that could not be placed (the inotify limits);
// - more noted changes than `maxEvents` between two snapshots: inotify drops events silently when
//   its queue (fs.inotify.max_queued_events, 16,384 by default) overflows, and every event of a
//   full queue reaches the journal before one is dropped, so a bound well below it means a
//   storm is never trusted; it also bounds what a build writing thousands of files costs;
// - a root with more folders than `maxFolders` (never journaled: too many watches);
// - a name that is not UTF-8, other exclude patterns, the root folder replaced;
// - a base older than `maxAgeMs` (changes inotify cannot see, such as writes through a
//   memory mapping, are caught by that full walk at the latest).
import { watch, type FSWatcher } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { SkippedEntry, SnapshotRoot } from './types.ts';
import type { Walked } from './walk.ts';

export interface JournalLimits {
  maxEvents: number;
  maxFolders: number;
  maxAgeMs: number;
  now: () => number;
}

export const DEFAULT_JOURNAL_LIMITS: JournalLimits = { maxEvents: 4096, maxFolders: 4096, maxAgeMs: 30 * 60_000, now: Date.now };

/** Names noted per folder (`''`: the root); null: the whole folder (a name that could not be read). */
export type Dirty = Map<string, Set<string> | null>;

/** What a patched walk starts from: the last walk's entries by folder, its reports, and what changed since. */
export interface JournalBase {
  children: ReadonlyMap<string, readonly Walked[]>;
  skipped: readonly SkippedEntry[];
  dirty: Dirty;
}

const REPLACEMENT = '\uFFFD';

export class RootJournal {
  private readonly limits: JournalLimits;
  /** What the walks were made with (the exclude patterns, the `only` list): a journal serves walks with the same. */
  readonly key: string;
  private readonly watchers = new Map<string, FSWatcher>();
  private dirty: Dirty = new Map();
  private noted = 0;
  private unsure: string | undefined;
  private disabled: string | undefined;
  private base: { children: Map<string, Walked[]>; skipped: SkippedEntry[]; rootIno: number; walkedAt: number } | undefined;
  private rootIno = -1;
  private fullWalkAt = 0;
  /** Walks served: from the journal (`patched`) and of every folder (`full`). */
  readonly walks = { patched: 0, full: 0 };

  constructor(key: string, limits: JournalLimits = DEFAULT_JOURNAL_LIMITS) {
    this.key = key;
    this.limits = limits;
  }

  /** Why the journal is not used at all, when it is not (said once in the log by the caller). */
  get disabledReason(): string | undefined {
    return this.disabled;
  }

  get watching(): number {
    return this.watchers.size;
  }

  /**
   * What the next walk may patch, taking the changes noted so far (later ones go to the next
   * walk); undefined when it must walk everything. Waits two turns of the event loop first, so
   * every change made before the call has reached the journal (inotify queues an event before
   * the write returns; the event loop reads the queue in its next poll).
   */
  async take(rootIno: number): Promise<JournalBase | undefined> {
    await nextTurn();
    await nextTurn();
    const base = this.base;
    if (!base || this.disabled || this.unsure || rootIno !== base.rootIno || this.limits.now() - base.walkedAt > this.limits.maxAgeMs) return undefined;
    const dirty = this.dirty;
    this.dirty = new Map();
    this.noted = 0;
    this.walks.patched++;
    return { children: base.children, skipped: base.skipped, dirty };
  }

  /** A full walk begins: every watch is placed again as it lists each folder. */
  beginFull(rootIno: number): void {
    this.walks.full++;
    this.closeWatchers();
    this.base = undefined;
    this.dirty = new Map();
    this.noted = 0;
    this.unsure = undefined;
    this.rootIno = rootIno;
    this.fullWalkAt = this.limits.now();
  }

  /** Watches a folder before it is listed (`rel`: '' for the root). A walk that sees it vanish learns so from its listing. */
  watchFolder(rel: string, abs: string): void {
    if (this.disabled || this.unsure) return;
    this.watchers.get(rel)?.close();
    this.watchers.delete(rel);
    if (this.watchers.size >= this.limits.maxFolders) {
      this.disable(`more than ${this.limits.maxFolders} folders`);
      return;
    }
    let watcher: FSWatcher;
    try {
      watcher = watch(abs, { persistent: false }, (_event, name) => this.note(rel, name));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // Gone or unreadable: the walk's listing says so, and the folder's parent notes a change of either.
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES' || code === 'EPERM') return;
      this.distrust(`could not watch ${abs}: ${(error as Error).message}`);
      return;
    }
    watcher.on('error', (error) => this.distrust(`watching ${abs} failed: ${error.message}`));
    this.watchers.set(rel, watcher);
  }

  /** Stops watching a folder and every folder below it (about to be walked afresh, or gone). */
  forgetBelow(rel: string): void {
    const prefix = rel === '' ? '' : `${rel}/`;
    for (const [folder, watcher] of this.watchers) {
      if (folder === rel || folder.startsWith(prefix)) {
        watcher.close();
        this.watchers.delete(folder);
      }
    }
  }

  /** The walk is done: its entries are the next walk's base. `entries` must not change afterwards. */
  rebase(entries: readonly Walked[], skipped: readonly SkippedEntry[]): void {
    if (this.disabled) return;
    const children = new Map<string, Walked[]>([['', []]]);
    for (const entry of entries) {
      if (typeof entry.rel !== 'string') {
        this.disable('a name that is not UTF-8');
        return;
      }
      const slash = entry.rel.lastIndexOf('/');
      const parent = slash < 0 ? '' : entry.rel.slice(0, slash);
      let list = children.get(parent);
      if (!list) children.set(parent, (list = []));
      list.push(entry);
      if (entry.kind === 'dir' && !children.has(entry.rel)) children.set(entry.rel, []);
    }
    this.base = { children, skipped: [...skipped], rootIno: this.rootIno, walkedAt: this.fullWalkAt };
  }

  /** Forgets the base after a walk that failed part-way: the next walk is a full one. */
  reset(): void {
    this.base = undefined;
  }

  close(): void {
    this.closeWatchers();
    this.base = undefined;
  }

  private note(folder: string, name: string | Buffer | null): void {
    if (this.unsure) return;
    if (++this.noted > this.limits.maxEvents) {
      this.distrust(`more than ${this.limits.maxEvents} changes between two snapshots`);
      return;
    }
    const text = typeof name === 'string' ? name : undefined;
    if (text === undefined || text === '' || text.includes(REPLACEMENT) || text.includes('/')) {
      this.dirty.set(folder, null);
      return;
    }
    let names = this.dirty.get(folder);
    if (names === null) return;
    if (!names) this.dirty.set(folder, (names = new Set()));
    names.add(text);
  }

  private distrust(reason: string): void {
    this.unsure ??= reason;
    // Until the next full walk nothing is noted: a storm costs nothing more.
    this.closeWatchers();
  }

  private disable(reason: string): void {
    this.disabled = reason;
    this.closeWatchers();
    this.base = undefined;
  }

  private closeWatchers(): void {
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
  }
}

/** The journals of every root being watched, by server; each made for the patterns it walks with. */
export class Journals {
  private readonly limits: JournalLimits;
  private readonly log: (message: string) => void;
  private readonly journals = new Map<string, { name: string; journal: RootJournal; said?: string }>();

  constructor(limits: JournalLimits, log: (message: string) => void) {
    this.limits = limits;
    this.log = log;
  }

  /**
   * The journal of a server's root for a walk with these patterns: the one kept (a new one when
   * the patterns differ), or with `start` false only one kept already.
   */
  of(name: string, root: SnapshotRoot, patterns: readonly string[], start: boolean): RootJournal | undefined {
    const id = `${name}\0${root.id}`;
    const key = JSON.stringify([root.dir, root.only ?? null, patterns]);
    const kept = this.journals.get(id);
    if (kept?.journal.key === key) return kept.journal;
    kept?.journal.close();
    this.journals.delete(id);
    if (!start) return undefined;
    const journal = new RootJournal(key, this.limits);
    this.journals.set(id, { name, journal });
    return journal;
  }

  /** Says once per journal why it is not used, when it is not. */
  explain(name: string): void {
    for (const kept of this.journals.values()) {
      const reason = kept.journal.disabledReason;
      if (kept.name !== name || !reason || kept.said === reason) continue;
      kept.said = reason;
      this.log(`snapshots of ${name} walk every folder each time (no change journal): ${reason}`);
    }
  }

  /** What the journals of a server's roots are doing. */
  state(name: string): Array<{ root: string; watching: number; patched: number; full: number; disabled?: string }> {
    return [...this.journals.entries()].filter(([, kept]) => kept.name === name).map(([id, { journal }]) => ({
      root: id.slice(id.indexOf('\0') + 1), watching: journal.watching, ...journal.walks,
      ...(journal.disabledReason !== undefined && { disabled: journal.disabledReason }),
    }));
  }

  /** Stops watching a server's roots (its editor stopped: no snapshot follows soon). */
  forget(name: string): void {
    for (const [id, kept] of this.journals) {
      if (kept.name !== name) continue;
      kept.journal.close();
      this.journals.delete(id);
    }
  }

  close(): void {
    for (const kept of this.journals.values()) kept.journal.close();
    this.journals.clear();
  }
}
