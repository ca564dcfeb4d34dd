// One service per manifests folder: a hidden lock file there names the process that serves it,
// by pid and start time (from /proc), so a pid reused by another process is not mistaken for it.
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { identityOf, isAlive, type ProcessIdentity } from '../core/procfs.ts';

/** Hidden, so the manifest store and watcher ignore it. */
export const LOCK_FILE = '.devbox-controller.lock';

export class FolderLockedError extends Error {
  readonly holder: ProcessIdentity;

  constructor(dir: string, holder: ProcessIdentity) {
    super(`${dir} is already served by devbox-controller pid ${holder.pid}${holder.pid === process.pid ? ' (this process)' : ''}`);
    this.holder = holder;
  }
}

export class FolderLock {
  readonly path: string;
  private readonly owner: ProcessIdentity;
  private released = false;

  private constructor(path: string, owner: ProcessIdentity) {
    this.path = path;
    this.owner = owner;
  }

  /**
   * Takes the folder's lock, creating the folder when missing. The lock file appears whole or
   * not at all (written aside, then hard-linked into place, which fails if one exists). A lock
   * whose process is gone is taken over; a live one is a FolderLockedError.
   */
  static async acquire(dir: string): Promise<FolderLock> {
    await fs.mkdir(dir, { recursive: true });
    const owner = identityOf(process.pid)!;
    const path = join(dir, LOCK_FILE);
    const aside = (what: string) => `${path}.${what}-${process.pid}-${randomUUID()}`;
    const mine = aside('new');
    await fs.writeFile(mine, JSON.stringify({ ...owner, startedAt: new Date().toISOString() }) + '\n');
    try {
      for (let attempt = 0; attempt < 10; attempt++) {
        try {
          await fs.link(mine, path);
          return new FolderLock(path, owner);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        const holder = await readHolder(path);
        if (holder === 'missing') continue;
        if (holder && isAlive(holder)) throw new FolderLockedError(dir, holder);
        // Stale. Move it aside (atomic: of two services taking over, one moves it), then check
        // that what moved is still the stale lock and not a live one that replaced it meanwhile.
        const stale = aside('stale');
        try {
          await fs.rename(path, stale);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw error;
        }
        const moved = await readHolder(stale);
        if (moved !== 'missing' && moved && isAlive(moved)) {
          await fs.link(stale, path).catch(() => undefined);
          await fs.rm(stale, { force: true });
          throw new FolderLockedError(dir, moved);
        }
        await fs.rm(stale, { force: true });
      }
      throw new Error(`could not take the lock ${path}: it keeps changing`);
    } finally {
      await fs.rm(mine, { force: true });
    }
  }

  /** Removes the lock file if it is still this process's. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const holder = await readHolder(this.path);
    if (holder !== 'missing' && holder?.pid === this.owner.pid && holder.startTicks === this.owner.startTicks) {
      await fs.rm(this.path, { force: true });
    }
  }
}

/** The lock's holder; undefined for a file that does not name one (taken as stale). */
async function readHolder(path: string): Promise<ProcessIdentity | undefined | 'missing'> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw error;
  }
  try {
    const { pid, startTicks } = JSON.parse(text);
    return Number.isInteger(pid) && pid > 0 && Number.isInteger(startTicks) ? { pid, startTicks } : undefined;
  } catch {
    return undefined;
  }
}
