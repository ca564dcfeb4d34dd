// A SnapshotStore in a local folder (a mounted disk, a Kubernetes volume, the tests' temp
// folders): each key is a file under the folder, written whole and flushed to disk
// (writeFileAtomic), so a reader or a crash sees the old object or the new one, never part.
// The rename is made durable by flushing the folder: at once, or for a batch of puts (the
// objects of a snapshot) once, by `flush`.
import { promises as fs } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { isTemporaryName, syncFolder, writeFileAtomic } from '../core/atomic-write.ts';
import { isValidKey } from './keys.ts';
import { StoreError, type PutOptions, type SnapshotStore } from './types.ts';

/**
 * Temporary files of puts in progress or cut short by a crash are never listed as keys: those of
 * writeFileAtomic, and `<key>.tmp-<hex>`, the form a folder written by an earlier version may hold.
 */
const isTemporary = (name: string) => isTemporaryName(name) || name.includes('.tmp-');

export class FolderStore implements SnapshotStore {
  readonly description: string;
  private readonly dir: string;
  /** Folders holding renames of batched puts not flushed yet, and flushes under way. */
  private readonly unsynced = new Set<string>();
  private readonly syncing = new Set<Promise<void>>();

  constructor(dir: string) {
    this.dir = dir;
    this.description = `folder ${dir}`;
  }

  async put(key: string, body: Buffer, signal?: AbortSignal, options?: PutOptions): Promise<void> {
    // Awaited once the body is written; a rejection before then is not an unhandled one.
    options?.after?.catch(() => undefined);
    signal?.throwIfAborted();
    const file = this.file(key);
    const after = options?.after;
    let afterFailed = false;
    try {
      await writeFileAtomic(file, body, {
        // The folder is flushed below: at once, or by `flush` for a batch.
        durable: true,
        deferFolderSync: true,
        // Folders below the base are made when missing, never the base itself.
        makeFolder: async (dir) => {
          await this.assertBase();
          await fs.mkdir(dir, { recursive: true });
        },
        beforeRename: after && (() => after.catch((reason: unknown) => {
          afterFailed = true;
          throw reason;
        })),
      });
    } catch (error) {
      throw afterFailed ? error : await this.mapped(error, `write ${key}`);
    }
    if (options?.batch) this.unsynced.add(dirname(file));
    else await this.syncFolder(dirname(file));
  }

  /** Flushes the folders of the batched puts that have returned; waits for flushes under way too (they may cover a put that returned before they began). */
  async flush(): Promise<void> {
    const started = [...this.unsynced].map((dir) => {
      const sync = this.syncFolder(dir).finally(() => this.syncing.delete(sync));
      return sync;
    });
    this.unsynced.clear();
    const waiting = [...this.syncing, ...started];
    for (const sync of started) this.syncing.add(sync);
    await Promise.all(waiting);
  }

  async get(key: string, signal?: AbortSignal): Promise<Buffer | undefined> {
    signal?.throwIfAborted();
    try {
      return await fs.readFile(this.file(key), { signal });
    } catch (error) {
      if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') {
        await this.assertBase();
        return undefined;
      }
      throw await this.mapped(error, `read ${key}`);
    }
  }

  async list(prefix: string, signal?: AbortSignal): Promise<string[]> {
    // The folder holding every key with this prefix: `servers/a` may be a name's start, `servers/a/` a folder.
    const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    if (folder !== '' && !isValidKey(folder)) throw new Error(`invalid store prefix "${prefix}"`);
    await this.assertBase();
    const keys: string[] = [];
    const visit = async (dir: string): Promise<void> => {
      signal?.throwIfAborted();
      let entries;
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch (error) {
        if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') return;
        throw await this.mapped(error, `list ${prefix}`);
      }
      await Promise.all(entries.map(async (entry) => {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) return visit(path);
        if (!entry.isFile() || isTemporary(entry.name)) return;
        const key = relative(this.dir, path).split(sep).join('/');
        if (key.startsWith(prefix) && isValidKey(key)) keys.push(key);
      }));
    };
    await visit(folder === '' ? this.dir : join(this.dir, ...folder.split('/')));
    return keys;
  }

  async delete(key: string, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const file = this.file(key);
    try {
      await fs.unlink(file);
    } catch (error) {
      if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') return;
      throw await this.mapped(error, `delete ${key}`);
    }
    // Folders left empty go too, so a purged server leaves nothing behind; the first non-empty one stops it.
    for (let dir = dirname(file); dir.length > this.dir.length && dir.startsWith(this.dir); dir = dirname(dir)) {
      try {
        await fs.rmdir(dir);
      } catch {
        break;
      }
    }
  }

  private file(key: string): string {
    if (!isValidKey(key)) throw new Error(`invalid store key "${key}": segments of [A-Za-z0-9._-] joined by '/'`);
    return join(this.dir, ...key.split('/'));
  }

  /** Every folder flush of the store goes through here (tests watch it). */
  private syncFolder(dir: string): Promise<void> {
    return syncFolder(dir);
  }

  private async assertBase(): Promise<void> {
    try {
      const stat = await fs.stat(this.dir);
      if (stat.isDirectory()) return;
    } catch (error) {
      if (code(error) !== 'ENOENT' && code(error) !== 'ENOTDIR') throw await this.mapped(error, 'reach the folder');
    }
    throw new StoreError('missing', `the persistence folder ${this.dir} does not exist`, `create ${this.dir}, or set DEVBOX_PERSIST_TO to a folder that exists`);
  }

  private async mapped(error: unknown, doing: string): Promise<unknown> {
    if (error instanceof StoreError) return error;
    const failure = code(error);
    const reason = error instanceof Error ? error.message : String(error);
    if (failure === 'EACCES' || failure === 'EPERM' || failure === 'EROFS') {
      return new StoreError('denied', `could not ${doing} in ${this.dir}: ${reason}`, `make ${this.dir} writable by the service's user`);
    }
    if (failure === 'ENOENT' || failure === 'ENOTDIR') {
      try {
        await this.assertBase();
      } catch (missing) {
        return missing;
      }
    }
    if (failure === 'ENOSPC' || failure === 'EDQUOT') {
      return new StoreError('transient', `could not ${doing} in ${this.dir}: ${reason}`, `free space on the disk of ${this.dir}`);
    }
    if (failure === 'EIO' || failure === 'EMFILE' || failure === 'ENFILE' || failure === 'EBUSY') {
      return new StoreError('transient', `could not ${doing} in ${this.dir}: ${reason}`, `check the disk of ${this.dir}`);
    }
    return error;
  }
}

function code(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}
