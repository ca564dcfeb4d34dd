// Replaces a file whole, so a reader sees the old bytes or the new, never part of them: the bytes
// go to a temporary file beside it (a name of its own for each write, so concurrent writers never
// share one), which is then renamed into place. The one implementation of that pattern here.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export interface AtomicWriteOptions {
  /** Permission bits the file has from its first byte, set exactly whatever the umask; unset: 0o666 less the umask. */
  mode?: number;
  /**
   * Flush the file to disk before the rename and its folder after it, so the new file survives a
   * crash or power loss once the call returns. Unset: the rename is atomic, but a crash soon after
   * may leave the old file, or none (say at the call why that is acceptable).
   */
  durable?: boolean;
  /** With `durable`: the folder is not flushed here; the caller flushes it later (syncFolder), once for many files. */
  deferFolderSync?: boolean;
  /** Called when the folder is missing: it makes the folder (or throws), and the write is tried once more. */
  makeFolder?: (dir: string) => Promise<unknown>;
  /** Awaited once the bytes are written, before the rename: when it rejects, the file is left as it was. */
  beforeRename?: () => Promise<unknown>;
}

/** `.<name>.<12 hex>.tmp`: hidden, and told apart from any file the caller keeps by isTemporaryName. */
const TEMPORARY = /^\..+\.[0-9a-f]{12}\.tmp$/;

/** Whether a name in a folder is one of this helper's temporary files (under way, or left by a crash). */
export function isTemporaryName(name: string): boolean {
  return TEMPORARY.test(name);
}

/** Writes `data` to `file` whole; on any failure the temporary file is removed and `file` is as it was. */
export async function writeFileAtomic(file: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const dir = dirname(file);
  const temp = join(dir, `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await openNew(temp, options);
  try {
    try {
      if (options.mode !== undefined) await handle.chmod(options.mode);
      await handle.writeFile(data);
      if (options.durable) await handle.sync();
    } finally {
      await handle.close();
    }
    await options.beforeRename?.();
    await fs.rename(temp, file);
  } catch (error) {
    await fs.rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
  if (options.durable && !options.deferFolderSync) await syncFolder(dir);
}

/** Makes the renames done in `dir` durable; a filesystem that cannot flush a folder is left as it is. */
export async function syncFolder(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r').catch(() => undefined);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on a folder; the rename itself is still atomic.
  } finally {
    await handle.close();
  }
}

/** Creates the temporary file (never an existing one), with its mode from the start. */
async function openNew(temp: string, options: AtomicWriteOptions): Promise<fs.FileHandle> {
  const mode = options.mode ?? 0o666;
  try {
    return await fs.open(temp, 'wx', mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || !options.makeFolder) throw error;
    await options.makeFolder(dirname(temp));
    return fs.open(temp, 'wx', mode);
  }
}
