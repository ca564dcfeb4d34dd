// The engine's local copy of each server's last index, with the stat of every file as this
// machine last saw it: the next snapshot reads only files whose (size, mtime, inode, mode)
// changed, and needs no request to fetch the index. Losing it costs time, never data, so it is
// written without a flush to disk (a snapshot writes it while its index is being committed: a
// copy whose id is not the store's latest is never used). Writes for one server run in order,
// and reading waits for the one under way. The last few indexes written are also kept in
// memory for a minute, so a snapshot soon after another (a stop, then SIGTERM) need not read
// and parse the file; a service at rest holds none.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../core/atomic-write.ts';
import { parseIndex, serializeIndex, type SnapshotIndex } from './index-file.ts';

/** How long, and how many entries (files, folders, links: about 300 bytes each), indexes are kept in memory. */
const MEMORY_MS = 60_000;
const MEMORY_ENTRIES = 50_000;

export class IndexCache {
  private readonly dir: string;
  private readonly log: (message: string) => void;
  private readonly writing = new Map<string, Promise<void>>();
  /** The last indexes written, least recently written first. */
  private readonly recent = new Map<string, { index: SnapshotIndex; entries: number; timer: NodeJS.Timeout }>();

  constructor(dir: string, log: (message: string) => void) {
    this.dir = dir;
    this.log = log;
  }

  /** The index last written for the server (never to be changed by the caller), or undefined. */
  async read(name: string): Promise<SnapshotIndex | undefined> {
    const kept = this.recent.get(name);
    if (kept) return kept.index;
    await this.writing.get(name);
    const file = this.file(name);
    try {
      return parseIndex(await fs.readFile(file), file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.log(`ignoring the cached index ${file}: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** Writes `index` (its `bytes` when serialised already) once the writes before it for the server are done; never fails (a failure is logged). The caller must not change `index` afterwards. */
  write(name: string, index: SnapshotIndex, serialized?: Buffer): Promise<void> {
    this.keep(name, index);
    const write = async () => {
      try {
        // Not flushed to disk: a copy lost in a crash costs the next snapshot time, never data (see above).
        await writeFileAtomic(this.file(name), serialized ?? serializeIndex(index), {
          // The first write makes the folder; its parent (the data folder) must exist.
          makeFolder: (dir) => fs.mkdir(dir).catch((error: NodeJS.ErrnoException) => {
            if (error.code !== 'EEXIST') throw error;
          }),
        });
      } catch (error) {
        this.log(`could not cache the index of ${name} in ${this.dir} (the next snapshot reads every file again): ${(error as Error).message}`);
      }
    };
    const done = (this.writing.get(name) ?? Promise.resolve()).then(write);
    this.writing.set(name, done);
    void done.then(() => {
      if (this.writing.get(name) === done) this.writing.delete(name);
    });
    return done;
  }

  async remove(name: string): Promise<void> {
    this.forget(name);
    await this.writing.get(name);
    await fs.rm(this.file(name), { force: true }).catch(() => undefined);
  }

  private keep(name: string, index: SnapshotIndex): void {
    this.forget(name);
    const entries = index.roots.reduce((sum, root) => sum + root.entries.length, 0);
    if (entries > MEMORY_ENTRIES) return;
    const timer = setTimeout(() => this.forget(name), MEMORY_MS);
    timer.unref();
    this.recent.set(name, { index, entries, timer });
    let total = 0;
    for (const kept of this.recent.values()) total += kept.entries;
    for (const [oldest, kept] of this.recent) {
      if (total <= MEMORY_ENTRIES) break;
      total -= kept.entries;
      this.forget(oldest);
    }
  }

  private forget(name: string): void {
    const kept = this.recent.get(name);
    if (!kept) return;
    clearTimeout(kept.timer);
    this.recent.delete(name);
  }

  private file(name: string): string {
    return join(this.dir, `${name}.index.json`);
  }
}
