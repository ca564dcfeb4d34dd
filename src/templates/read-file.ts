// Reads files of the templates folder as untrusted input, the way src/manifests/read-entry.ts reads
// manifests: never through a link at the last step, never blocking on a FIFO or device, never
// more than a limit, never a half-written file; and, since an archive path has folders in it,
// never a file whose real path (through links in those folders) is outside the templates folder.
import { constants, promises as fs } from 'node:fs';
import { sep } from 'node:path';
import { checkRegular, openUntrusted, readStable, tooLarge, type FileRule } from '../core/untrusted-file.ts';

/** A file that may not be read; the message completes "<file> …" and says what to change. */
export class UnsafeFileError extends Error {}

const CHUNK = 64 * 1024;

const ruleOf = (rule: string): FileRule => ({ rule, error: (message) => new UnsafeFileError(message) });

/**
 * Opens `path` for reading when it is a regular file of at most `maxBytes` whose real path is
 * inside `root`; undefined when it does not exist. `rule` says what the file must be, for the
 * messages ("a template must be a regular file … at most 256 KiB").
 */
export async function openInside(root: string, path: string, maxBytes: number, rule: string): Promise<{ handle: fs.FileHandle; size: number } | undefined> {
  const handle = await openUntrusted(path, ruleOf(rule));
  if (!handle) return undefined;
  try {
    // Where the descriptor really points, whatever links the path went through.
    const real = await fs.readlink(`/proc/self/fd/${handle.fd}`);
    const realRoot = await fs.realpath(root);
    if (!real.startsWith(realRoot + sep)) throw new UnsafeFileError(`leads out of the templates folder (to ${real}) through a symbolic link: ${rule}; replace the link with a copy of the file`);
    return { handle, size: await checkRegular(handle, maxBytes, ruleOf(rule)) };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** The bytes of `path` (see openInside), read again when it changes while being read; undefined when missing. */
export async function readInside(root: string, path: string, maxBytes: number, rule: string): Promise<Buffer | undefined> {
  const opened = await openInside(root, path, maxBytes, rule);
  if (!opened) return undefined;
  const { handle } = opened;
  try {
    return await readStable(handle, maxBytes, ruleOf(rule));
  } finally {
    await handle.close();
  }
}

/** Copies `path` (see openInside) to `dest`, a new owner-only file; at most maxBytes are copied. */
export async function copyInside(root: string, path: string, maxBytes: number, rule: string, dest: string): Promise<boolean> {
  const opened = await openInside(root, path, maxBytes, rule);
  if (!opened) return false;
  const { handle } = opened;
  let out: fs.FileHandle | undefined;
  try {
    out = await fs.open(dest, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (let total = 0; ;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, total);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > maxBytes) throw tooLarge(total, maxBytes, ruleOf(rule));
      await out.write(buffer, 0, bytesRead);
    }
    return true;
  } catch (error) {
    await out?.close();
    out = undefined;
    await fs.rm(dest, { force: true });
    throw error;
  } finally {
    await out?.close();
    await handle.close();
  }
}
