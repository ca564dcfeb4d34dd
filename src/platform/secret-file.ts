// Files that hold a secret (the access token, the client secret): written whole or not at all,
// readable by the service's user only, and durable once the write returns.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes `text` to a temporary file beside `file` (mode 0600), flushes it to disk, renames it into
 * place and flushes the folder: a reader sees the old file or the new one, never half of one.
 */
export async function writeSecretFile(file: string, text: string): Promise<void> {
  const dir = dirname(file);
  const temp = join(dir, `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await fs.open(temp, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(text);
      await handle.chmod(0o600);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, file);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
  await syncFolder(dir);
}

/** A folder for secret files: made if missing, and closed to other users (0700) either way. */
export async function secretFolder(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.chmod(dir, 0o700);
}

/** Creates an empty file with mode 0600 when there is none; an existing one keeps its text and is made 0600. */
export async function ensureSecretFile(file: string): Promise<void> {
  const handle = await fs.open(file, 'a', 0o600);
  try {
    await handle.chmod(0o600);
  } finally {
    await handle.close();
  }
}

/** Makes a rename in `dir` durable; a filesystem that cannot flush folders is left as it is. */
async function syncFolder(dir: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(dir, 'r');
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on a folder; the rename itself is still atomic.
  } finally {
    await handle?.close();
  }
}
