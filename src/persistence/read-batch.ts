// Reads and hashes a batch of the files a snapshot keeps, the same way on the event loop's thread
// and in a worker (work-pool.ts): each file is read into one buffer shared by the batch (a
// buffer that can be handed between threads without a copy), read again when it changed while
// being read (up to `attempts` times; then what was read is kept and said to be unstable), and
// hashed. Files larger than one object are not read here (capture.ts streams them).
import { closeSync, fstatSync } from 'node:fs';
import { contentHashSliced, HASH_ALGORITHM } from './hash.ts';
import { fill, openForRead, same, type AfterRead, type FileState } from './read-file.ts';
import type { Slicer } from './slices.ts';
import type { RawPath } from './walk.ts';

export interface BatchFile extends FileState {
  abs: RawPath;
}

export type BatchOutcome =
  /** Read: its bytes (all kept) are `length` bytes at `offset` of `buffers[buffer]`; mtime, ino and mode as after the read. */
  | { kind: 'file'; hash: string; buffer: number; offset: number; length: number; stable: boolean; mtimeMs: number; ino: number; mode: number }
  /** Gone, or no longer a regular file, since the walk. */
  | { kind: 'gone' }
  /** Grown larger than `maxBytes` since the walk: not read here. */
  | { kind: 'large' }
  | { kind: 'unreadable' };

export interface BatchRead {
  outcomes: BatchOutcome[];
  /** The bytes read; transferable (none is a slice of Node's shared pool). */
  buffers: ArrayBuffer[];
}

export interface BatchHooks {
  /** Test seam (on the event loop's thread only): runs after a file's bytes are read, before they are checked. */
  afterRead?: AfterRead;
  /** Yields to the event loop between files (on the event loop's thread). */
  slicer?: Slicer;
}

export async function readBatch(files: readonly BatchFile[], attempts: number, hooks: BatchHooks, maxBytes: number): Promise<BatchRead> {
  const total = files.reduce((sum, file) => sum + file.size, 0);
  // allocUnsafeSlow: a buffer of its own, not zero-filled (it is overwritten), transferable.
  const main = Buffer.allocUnsafeSlow(total);
  const buffers: ArrayBuffer[] = [main.buffer as ArrayBuffer];
  const outcomes: BatchOutcome[] = [];
  let offset = 0;
  for (const file of files) {
    const region = { buffer: 0, offset, room: file.size };
    offset += file.size;
    let before: FileState = file;
    for (let attempt = 1; ; attempt++) {
      while (hooks.slicer?.due()) await hooks.slicer.pass();
      if (before.size > maxBytes) {
        outcomes.push({ kind: 'large' });
        break;
      }
      if (before.size > region.room) {
        // It grew since the walk: a buffer of its own.
        region.buffer = buffers.push(Buffer.allocUnsafeSlow(before.size).buffer as ArrayBuffer) - 1;
        region.offset = 0;
        region.room = before.size;
      }
      const into = Buffer.from(buffers[region.buffer], region.offset, before.size);
      const fd = openForRead(file.abs);
      if (typeof fd !== 'number') {
        outcomes.push(fd);
        break;
      }
      let after;
      let length = 0;
      try {
        length = fill(fd, into, 0);
        await hooks.afterRead?.(file.abs, attempt);
        after = fstatSync(fd);
      } catch (error) {
        // A FIFO put in its place since the walk (opened without blocking): not a file any more.
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        after = undefined;
      } finally {
        closeSync(fd);
      }
      if (!after?.isFile()) {
        outcomes.push({ kind: 'gone' });
        break;
      }
      const stable = length === before.size && same(before, after);
      if (!stable && attempt < attempts) {
        before = after;
        continue;
      }
      outcomes.push({
        kind: 'file', hash: await contentHashSliced(into.subarray(0, length), HASH_ALGORITHM, hooks.slicer), buffer: region.buffer, offset: region.offset, length, stable,
        mtimeMs: after.mtimeMs, ino: after.ino, mode: after.mode & 0o7777,
      });
      break;
    }
  }
  return { outcomes, buffers };
}

/** Groups files into batches of about `batchBytes` (at most `batchFiles` each); a file of `aloneBytes` or more is a batch of its own. */
export function planBatches<T extends { size: number }>(files: readonly T[], batchBytes: number, batchFiles: number, aloneBytes: number): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const file of files) {
    if (file.size >= aloneBytes) {
      batches.push([file]);
      continue;
    }
    if (current.length > 0 && (bytes + file.size > batchBytes || current.length >= batchFiles)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(file);
    bytes += file.size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
