// The manifests folder's watch: chokidar's events for the files (the service's own writes are
// told apart and not reported), a look at the folder itself every second (gone, back, or
// replaced by another), and a listing of its names every 30 s for an event that was lost.
import { basename } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { BACKGROUND_MS, every, type Periodic } from '../core/ticks.ts';
import { MANIFEST_EXT } from './parse.ts';
import type { ManifestEvents, ManifestWatch } from './source.ts';
import type { ManifestStore } from './store.ts';

const RECHECK_MS = 250;
/** How often the manifests folder itself is looked at (gone, back, or replaced by another): with the service's other background checks. */
const FOLDER_CHECK_MS = BACKGROUND_MS;
/**
 * How often the folder's names are compared with the servers known, so a file whose event was
 * lost (an inotify queue that overflowed under a sync of thousands of files) is still seen. One
 * directory listing: it reads no manifest.
 */
const FOLDER_SCAN_MS = 30_000;

export class FolderWatch implements ManifestWatch {
  readonly #store: ManifestStore;
  readonly #events: ManifestEvents;
  readonly #log: (message: string) => void;
  #watcher: FSWatcher | undefined;
  /** Pending second looks at a manifest after our own write, by name. */
  readonly #rechecks = new Map<string, NodeJS.Timeout>();
  readonly #timers: Periodic[] = [];
  /** The folder's identity when last looked at; undefined while it is missing. */
  #folder: string | undefined;
  #closed = false;

  constructor(store: ManifestStore, events: ManifestEvents, log: (message: string) => void) {
    this.#store = store;
    this.#events = events;
    this.#log = log;
  }

  async start(): Promise<void> {
    this.#folder = await this.#store.folderIdentity();
    await this.#watchFolder();
    this.#timers.push(every(FOLDER_SCAN_MS, () => void this.#scan()), every(FOLDER_CHECK_MS, () => void this.#checkFolder()));
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) timer.stop();
    for (const timer of this.#rechecks.values()) clearTimeout(timer);
    this.#rechecks.clear();
    await this.#watcher?.close();
  }

  async #watchFolder(): Promise<void> {
    const dir = this.#store.dir;
    await this.#watcher?.close();
    const watcher = watch(dir, {
      ignoreInitial: true,
      depth: 0,
      // A link in the folder is reported, never followed (it may lead anywhere).
      followSymlinks: false,
      ignored: (path, stats) => basename(path).startsWith('.') || (stats?.isFile() === true && !path.endsWith(MANIFEST_EXT)),
    });
    this.#watcher = watcher;
    watcher.on('all', (_event, path) => void this.onFileEvent(path));
    watcher.on('error', (error) => this.#log(`watching ${dir} failed: ${(error as Error).message}`));
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  }

  /**
   * Notices the manifests folder going (a failed mount, a move) and coming back, or being
   * replaced by another (a git checkout): says so once, watches the folder that is there now,
   * and has every server looked at again. While it is away, servers are paused, not deleted.
   */
  async #checkFolder(): Promise<void> {
    const dir = this.#store.dir;
    const now = await this.#store.folderIdentity();
    if (now === this.#folder || this.#closed) return;
    const before = this.#folder;
    this.#folder = now;
    if (now === undefined) {
      this.#log(`manifests folder ${dir} is missing (moved, deleted or not mounted?): every server is paused; no editor is stopped and no file is deleted until it is back`);
      return;
    }
    this.#log(before === undefined
      ? `manifests folder ${dir} is back: resuming`
      : `manifests folder ${dir} was replaced by another folder: watching the new one; servers whose manifest is not in it stay paused until it is`);
    await this.#watchFolder();
    this.#events.everything();
  }

  /** Reports the names whose file came or went without an event (one listing, no reads). */
  async #scan(): Promise<void> {
    if (this.#closed || this.#folder === undefined) return;
    const listed = new Set(await this.#store.list().catch(() => []));
    // Known names gone from the folder; a set of the known names is made only when the folder
    // holds names that are not all known (at rest every name is: no second set of thousands).
    let knownListed = 0;
    for (const name of this.#events.known()) {
      if (listed.has(name)) knownListed++;
      else this.#events.changed(name);
    }
    if (knownListed === listed.size) return;
    const known = new Set(this.#events.known());
    for (const name of listed) if (!known.has(name)) this.#events.changed(name);
  }

  /** A file event (not a `#` field: a test takes events away to show the listing finds what they missed). */
  private async onFileEvent(path: string): Promise<void> {
    const file = basename(path);
    if (!file.endsWith(MANIFEST_EXT) || file.startsWith('.') || this.#closed) return;
    const name = file.slice(0, -MANIFEST_EXT.length);
    // Our own writes come back as events: skip them, or every write would wake the controller again.
    if (await this.#isOwnWrite(name)) {
      // Our rename replaced the file chokidar was watching; an edit landing while it re-attaches
      // to the new file can go unreported, so look once more a moment later.
      // One recheck per name at a time, however many events a rename makes.
      if (this.#rechecks.has(name)) return;
      const timer = setTimeout(async () => {
        this.#rechecks.delete(name);
        if (!this.#closed && !(await this.#isOwnWrite(name))) this.#events.changed(name);
      }, RECHECK_MS);
      timer.unref();
      this.#rechecks.set(name, timer);
      return;
    }
    this.#events.changed(name);
  }

  async #isOwnWrite(name: string): Promise<boolean> {
    const store = this.#store;
    // A file this process never wrote (a sync landing thousands) is not read here: its reconcile reads it.
    if (!store.mayBeOwnWrite(name)) return false;
    // Read like any manifest: bounded, not through links, never blocking on a FIFO.
    const text = await store.textOf(name);
    return text !== undefined && store.isOwnWrite(name, text);
  }
}
