// Reads a file a snapshot keeps, and tells whether it changed while being read (its size or
// mtime differ after the read from before it). Opened without following a symlink and without
// blocking, so a file swapped for a link or a FIFO since the walk is never followed or waited on.
// The calls are synchronous (see slices.ts): a small file costs four quick system calls.
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import type { Slicer } from './slices.ts';
import type { RawPath } from './walk.ts';

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** The stat fields a read is checked against. */
export interface FileState {
  size: number;
  mtimeMs: number;
  ino: number;
}

export type ReadOutcome<T> =
  | { kind: 'read'; value: T; after: Stats; stable: boolean }
  /** Gone, or no longer a regular file, since the walk. */
  | { kind: 'gone' }
  | { kind: 'unreadable' };

/** Called after a file's bytes are read and before they are checked for changes (tests change the file here). */
export type AfterRead = (abs: RawPath, attempt: number) => void | Promise<void>;

export const same = (a: FileState, b: FileState) => a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;

/**
 * Opens `abs` and hands its descriptor to `read`; `before` is the state the walk saw. Stable
 * when the state after the read equals it and `read` got `before.size` bytes.
 */
export async function readChecked<T>(
  abs: RawPath, before: FileState, read: (fd: number, size: number) => Promise<{ value: T; bytes: number }>,
  afterRead: AfterRead | undefined, attempt: number, slicer: Slicer | undefined,
): Promise<ReadOutcome<T>> {
  // Each read is a slice's unit of work: several files read at once must not run as one long stretch.
  while (slicer?.due()) await slicer.pass();
  const fd = openForRead(abs);
  if (typeof fd !== 'number') return fd;
  try {
    const { value, bytes } = await read(fd, before.size);
    await afterRead?.(abs, attempt);
    const after = fstatSync(fd);
    if (!after.isFile()) return { kind: 'gone' };
    return { kind: 'read', value, after, stable: bytes === before.size && same(before, after) };
  } finally {
    closeSync(fd);
  }
}

/** A descriptor to read `abs` through, or why there is none (a FIFO opens without blocking, and is then found not to be a file). */
export function openForRead(abs: RawPath): number | { kind: 'gone' } | { kind: 'unreadable' } {
  try {
    return openSync(abs, OPEN_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENXIO' || code === 'ENOTDIR') return { kind: 'gone' };
    if (code === 'EACCES' || code === 'EPERM') return { kind: 'unreadable' };
    throw error;
  }
}

/** Reads up to `size` bytes from `position` into `buffer` (fewer when the file ends first). */
export function fill(fd: number, buffer: Buffer, position: number): number {
  let filled = 0;
  while (filled < buffer.length) {
    const bytesRead = readSync(fd, buffer, filled, buffer.length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled;
}

/** Reads up to `size` bytes from the start into `into` when given (and large enough), else a new buffer; shorter when the file shrank. */
export function readAll(into?: Buffer): (fd: number, size: number) => Promise<{ value: Buffer; bytes: number }> {
  return async (fd, size) => {
    const buffer = into && into.length >= size ? into.subarray(0, size) : Buffer.allocUnsafe(size);
    const filled = fill(fd, buffer, 0);
    return { value: filled === size ? buffer : buffer.subarray(0, filled), bytes: filled };
  };
}

/** Reads `size` bytes in chunks of `chunkBytes`, handing each to `onChunk` (which may yield) before reading on; a fresh buffer each. */
export async function readChunks(fd: number, size: number, chunkBytes: number, onChunk: (chunk: Buffer) => Promise<void>): Promise<number> {
  let position = 0;
  while (position < size) {
    const buffer = Buffer.allocUnsafe(Math.min(chunkBytes, size - position));
    const filled = fill(fd, buffer, position);
    if (filled > 0) await onChunk(filled === buffer.length ? buffer : buffer.subarray(0, filled));
    position += filled;
    if (filled < buffer.length) break;
  }
  return position;
}
