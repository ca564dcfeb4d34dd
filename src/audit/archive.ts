// The audit trail's copies at the persistence target (a folder or a Unity Catalog volume, through
// the store the snapshots use), under audit/: each rotated file once, the file being written again
// at each round and at shutdown; and, for a fresh data folder (a new container), every file
// brought back first so the chain goes on. When the target holds a trail that cannot be brought
// back, nothing is copied this run: a new chain must never overwrite the kept one.
import { mkdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { SnapshotStore } from '../persistence/types.ts';
import { chainFiles, CURRENT_FILE, firstSeqOf } from './files.ts';

const PREFIX = 'audit/';
/** How long a start waits for the target to give the trail back. */
const BRING_BACK_MS = 15_000;

export type ArchiveStore = Pick<SnapshotStore, 'put' | 'get' | 'list' | 'description'>;

export class AuditArchive {
  readonly #store: ArchiveStore;
  readonly #log: (message: string) => void;
  #disabled: string | undefined;
  /** The copy under way and those queued behind it (an older content never lands after a newer one). */
  #copies: Promise<void> = Promise.resolve();

  constructor(store: ArchiveStore, log: (message: string) => void) {
    this.#store = store;
    this.#log = log;
  }

  /** Where the copies go, for GET /health; with why they do not, when they do not. */
  get where(): string {
    return `${this.#store.description}/${PREFIX}${this.#disabled ? ` (not copied: ${this.#disabled})` : ''}`;
  }

  /** Copies the target's files into `dir` when `dir` holds no trail yet. */
  async bringBack(dir: string): Promise<void> {
    if (chainFiles(dir).length > 0) return;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`no answer within ${BRING_BACK_MS / 1000} s`)), BRING_BACK_MS);
    try {
      const keys = (await this.#store.list(PREFIX, abort.signal))
        .map((key) => key.slice(PREFIX.length))
        .filter((file) => file === CURRENT_FILE || firstSeqOf(file) !== undefined);
      if (keys.length === 0) return;
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      for (const file of keys) {
        const body = await this.#store.get(PREFIX + file, abort.signal);
        if (body) await writeFile(join(dir, file), body, { mode: 0o600 });
      }
      this.#log(`audit trail: ${keys.length} file(s) brought back from ${this.#store.description}/${PREFIX}`);
    } catch (error) {
      this.#disabled = `the trail kept there could not be read at start (${(error as Error).message})`;
      this.#log(`audit trail: ${this.#disabled}; this run's entries stay in the data folder only, and the kept trail is left as it is`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Copies one file of the trail (its whole content now) to the target; copies run one at a time, in the order asked. */
  copy(path: string): Promise<void> {
    if (this.#disabled) return this.#copies;
    let body: Buffer;
    try {
      // Read now (at most one rotation's size): a rotated file may be pruned from the data folder before its turn comes.
      body = readFileSync(path);
    } catch (error) {
      this.#log(`audit trail: reading ${basename(path)} to copy it failed: ${(error as Error).message}`);
      return this.#copies;
    }
    this.#copies = this.#copies.then(async () => {
      try {
        await this.#store.put(PREFIX + basename(path), body);
      } catch (error) {
        this.#log(`audit trail: copying ${basename(path)} to ${this.#store.description} failed: ${(error as Error).message}`);
      }
    });
    return this.#copies;
  }
}
