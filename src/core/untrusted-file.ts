// Reading a file that someone else writes (a manifest, a template, an archive a template names)
// as untrusted input: never through a link at the last step, never blocking on a FIFO or device,
// never more than a limit, and never a half-written file. The callers say what the file must be
// (`rule`) and which error they throw, so each message completes "<file> …" and says what to change.
import { constants, promises as fs, type BigIntStats } from 'node:fs';

const ATTEMPTS = 3;
const CHUNK = 64 * 1024;
/** O_NOFOLLOW refuses a link; O_NONBLOCK makes opening a FIFO or device return at once. */
export const UNTRUSTED_OPEN = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** What a file must be and how its refusals are made. */
export interface FileRule {
  /** What the file must be, for every message ("a manifest must be a regular file …, at most 256 KiB"). */
  rule: string;
  /** Said after the size when the file is too large; the rule unless given. */
  sizeRule?: string;
  /** The error a refusal is (its message completes "<file> …"). */
  error: (message: string) => Error;
}

/** Opens `path` the untrusted way; undefined when it does not exist. */
export async function openUntrusted(path: string, rule: FileRule): Promise<fs.FileHandle | undefined> {
  try {
    return await fs.open(path, UNTRUSTED_OPEN);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw rule.error(refusal(code, rule.rule));
  }
}

/** Refuses a descriptor that is not a regular file of at most maxBytes; its size otherwise. */
export async function checkRegular(handle: fs.FileHandle, maxBytes: number, rule: FileRule): Promise<number> {
  const stats = await handle.stat({ bigint: true });
  if (!stats.isFile()) throw rule.error(`is ${kindOf(stats)}: ${rule.rule}`);
  if (stats.size > BigInt(maxBytes)) throw tooLarge(Number(stats.size), maxBytes, rule);
  return Number(stats.size);
}

/** The bytes of an open file, read again (a few times) when it changes while being read. */
export async function readStable(handle: fs.FileHandle, maxBytes: number, rule: FileRule): Promise<Buffer> {
  return (await readStableWithStats(handle, maxBytes, rule)).bytes;
}

/** As readStable, with the file's stats as they were when its bytes were read whole. */
async function readStableWithStats(handle: fs.FileHandle, maxBytes: number, rule: FileRule): Promise<{ bytes: Buffer; stats: BigIntStats }> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const before = await handle.stat({ bigint: true });
    if (!before.isFile()) throw rule.error(`is ${kindOf(before)}: ${rule.rule}`);
    if (before.size > BigInt(maxBytes)) throw tooLarge(Number(before.size), maxBytes, rule);
    const bytes = await readAtMost(handle, maxBytes + 1, Number(before.size));
    if (bytes.length > maxBytes) throw tooLarge(bytes.length, maxBytes, rule);
    const after = await handle.stat({ bigint: true });
    if (after.size === before.size && after.mtimeNs === before.mtimeNs && after.size === BigInt(bytes.length)) return { bytes, stats: after };
  }
  throw rule.error('kept changing while it was being read: write it whole (to a temporary file, then rename it into place)');
}

/** The file's bytes, or undefined when there is none (see openUntrusted and readStable). */
export async function readUntrusted(path: string, maxBytes: number, rule: FileRule): Promise<Buffer | undefined> {
  return (await readUntrustedWithStats(path, maxBytes, rule))?.bytes;
}

/** As readUntrusted, with the stats of the file whose bytes they are. */
export async function readUntrustedWithStats(path: string, maxBytes: number, rule: FileRule): Promise<{ bytes: Buffer; stats: BigIntStats } | undefined> {
  const handle = await openUntrusted(path, rule);
  if (!handle) return undefined;
  try {
    return await readStableWithStats(handle, maxBytes, rule);
  } finally {
    await handle.close();
  }
}

/**
 * Which version of a file the stats are of: its device, inode, size and change times. Any write
 * moves its times, so the same version is the same content (times are kept to the nanosecond
 * where the file system keeps them).
 */
export function versionOf(stats: BigIntStats): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

export function tooLarge(size: number, maxBytes: number, rule: FileRule): Error {
  return rule.error(`is larger than ${formatBytes(maxBytes)} (${size > maxBytes ? formatBytes(size) : 'growing'}): ${rule.sizeRule ?? rule.rule}`);
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

/**
 * Up to `limit` bytes. The first read asks for one byte more than the size the file had
 * (`expected`), so a file that did not grow is read in one call into a buffer of its size; a
 * short read of a regular file is its end (the caller compares the sizes before and after).
 */
async function readAtMost(handle: fs.FileHandle, limit: number, expected: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  let want = Math.min(Math.max(1, expected + 1), limit);
  while (total < limit) {
    const chunk = Buffer.allocUnsafe(want);
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, total);
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
    if (bytesRead < chunk.length) break;
    want = Math.min(CHUNK, limit - total);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total);
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
