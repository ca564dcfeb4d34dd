// Reads files of the templates folder as untrusted input, the way src/manifests/read-entry.ts reads
// manifests: never through a link at the last step, never blocking on a FIFO or device, never
// more than a limit, never a half-written file; and, since an archive path has folders in it,
// never a file whose real path (through links in those folders) is outside the templates folder.
import { constants, promises as fs } from 'node:fs';
import { sep } from 'node:path';
import { kindOf } from '../manifests/read-entry.ts';

/** A file that may not be read; the message completes "<file> …" and says what to change. */
export class UnsafeFileError extends Error {}

const ATTEMPTS = 3;
const CHUNK = 64 * 1024;

/**
 * Opens `path` for reading when it is a regular file of at most `maxBytes` whose real path is
 * inside `root`; undefined when it does not exist. `rule` says what the file must be, for the
 * messages ("a template must be a regular file … at most 256 KiB").
 */
export async function openInside(root: string, path: string, maxBytes: number, rule: string): Promise<{ handle: fs.FileHandle; size: number } | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new UnsafeFileError(refusal(code, rule));
  }
  try {
    // Where the descriptor really points, whatever links the path went through.
    const real = await fs.readlink(`/proc/self/fd/${handle.fd}`);
    const realRoot = await fs.realpath(root);
    if (!real.startsWith(realRoot + sep)) throw new UnsafeFileError(`leads out of the templates folder (to ${real}) through a symbolic link: ${rule}; replace the link with a copy of the file`);
    const stats = await handle.stat({ bigint: true });
    if (!stats.isFile()) throw new UnsafeFileError(`is ${kindOf(stats)}: ${rule}`);
    if (stats.size > BigInt(maxBytes)) throw tooLarge(Number(stats.size), maxBytes, rule);
    return { handle, size: Number(stats.size) };
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
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const before = await handle.stat({ bigint: true });
      const bytes = await readAtMost(handle, maxBytes + 1);
      if (bytes.length > maxBytes) throw tooLarge(bytes.length, maxBytes, rule);
      const after = await handle.stat({ bigint: true });
      if (after.size === before.size && after.mtimeNs === before.mtimeNs && after.size === BigInt(bytes.length)) return bytes;
    }
    throw new UnsafeFileError('kept changing while it was being read: write it whole (to a temporary file, then rename it into place)');
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
      if (total > maxBytes) throw tooLarge(total, maxBytes, rule);
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

async function readAtMost(handle: fs.FileHandle, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  while (total < limit) {
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK, limit - total));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, total);
    if (bytesRead === 0) break;
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
  }
  return Buffer.concat(chunks, total);
}

function tooLarge(size: number, maxBytes: number, rule: string): UnsafeFileError {
  return new UnsafeFileError(`is larger than ${formatBytes(maxBytes)} (${size > maxBytes ? formatBytes(size) : 'growing'}): ${rule}`);
}

function formatBytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(bytes % (1024 * 1024) === 0 ? 0 : 1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}

function refusal(code: string | undefined, rule: string): string {
  switch (code) {
    case 'ELOOP': return `is a symbolic link, which is never followed: ${rule}; replace the link with a copy of the file`;
    case 'ENXIO': return `is a socket: ${rule}`;
    case 'EISDIR': return `is a folder: ${rule}`;
    case 'EACCES':
    case 'EPERM': return `cannot be read by the service (permission denied): make it readable; ${rule}`;
    default: return `cannot be opened (${code ?? 'unknown error'}): ${rule}`;
  }
}
