// Reads one entry of the manifests folder as untrusted input: never through a link, never
// blocking on a FIFO or device, never more than the size limit, and never a half-written file.
import { constants, promises as fs, type BigIntStats } from 'node:fs';

/** The largest manifest read; a larger file is reported, not parsed (its YAML would cost far more heap). */
export const MAX_MANIFEST_BYTES = 256 * 1024;

/** An entry that cannot be a manifest; the message completes "<file> …" and says what to change. */
export class UnreadableEntryError extends Error {}

const HOW_TO_FIX = 'a manifest must be a regular file directly in the manifests folder, at most 256 KiB';
const ATTEMPTS = 3;

/**
 * The entry's text, or undefined when there is none. O_NOFOLLOW refuses links (to files
 * outside the folder or to FIFOs); O_NONBLOCK makes opening a FIFO or device return at once;
 * fstat on the open descriptor must say regular file. A file that changes while being read is
 * read again, a few times.
 */
export async function readManifestEntry(path: string): Promise<string | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new UnreadableEntryError(refusal(code));
  }
  try {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const before = await handle.stat({ bigint: true });
      if (!before.isFile()) throw new UnreadableEntryError(`is ${kindOf(before)}: ${HOW_TO_FIX}`);
      if (before.size > MAX_MANIFEST_BYTES) throw tooLarge(Number(before.size));
      const bytes = await readAtMost(handle, MAX_MANIFEST_BYTES + 1);
      if (bytes.length > MAX_MANIFEST_BYTES) throw tooLarge(bytes.length);
      const after = await handle.stat({ bigint: true });
      if (after.size === before.size && after.mtimeNs === before.mtimeNs && after.size === BigInt(bytes.length)) {
        return bytes.toString('utf8');
      }
    }
    throw new UnreadableEntryError('kept changing while it was being read: write it whole (to a temporary file, then rename it into place)');
  } finally {
    await handle.close();
  }
}

async function readAtMost(handle: fs.FileHandle, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  while (total < limit) {
    const chunk = Buffer.allocUnsafe(Math.min(64 * 1024, limit - total));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, total);
    if (bytesRead === 0) break;
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
  }
  return Buffer.concat(chunks, total);
}

function tooLarge(size: number): UnreadableEntryError {
  const shown = size > MAX_MANIFEST_BYTES ? `${(size / 1024).toFixed(0)} KiB` : 'growing';
  return new UnreadableEntryError(`is larger than ${MAX_MANIFEST_BYTES / 1024} KiB (${shown}): a manifest may be at most ${MAX_MANIFEST_BYTES / 1024} KiB; keep large settings out of it`);
}

function refusal(code: string | undefined): string {
  switch (code) {
    case 'ELOOP': return `is a symbolic link, which is never followed: ${HOW_TO_FIX}; replace the link with a copy of the file`;
    case 'ENXIO': return `is a socket: ${HOW_TO_FIX}`;
    case 'EACCES':
    case 'EPERM': return `cannot be read by the service (permission denied): make it readable, ${HOW_TO_FIX}`;
    default: return `cannot be opened (${code ?? 'unknown error'}): ${HOW_TO_FIX}`;
  }
}

/** What a folder entry that is not a regular file is, in words ("a FIFO (named pipe)"). */
export function kindOf(stats: BigIntStats): string {
  if (stats.isDirectory()) return 'a folder';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}
