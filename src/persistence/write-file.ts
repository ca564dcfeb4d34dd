// Writes restored entries so a crash or a reader never sees half of one: each file or link is
// made under a temporary name in its folder, given its mode and mtime, then renamed into place.
// Paths are raw bytes, so names that are not UTF-8 are written exactly. The calls are
// synchronous (see slices.ts); the caller yields between files.
import { randomBytes } from 'node:crypto';
import {
  closeSync, fchmodSync, fstatSync, futimesSync, lutimesSync, openSync, renameSync, rmSync, symlinkSync, writeSync, type Stats,
} from 'node:fs';

const SLASH = 0x2f;

export const childPath = (dir: Buffer, rel: Buffer): Buffer => Buffer.concat([dir, Buffer.from('/'), rel]);

/** Every temporary name starts so; one a crash left behind is never kept by a snapshot (see walk.ts). */
export const RESTORE_TEMP_PREFIX = '.devbox-restore-';
// Temporary names: one random part per process, then a counter (a random draw per file costs more than the write).
const TEMP_PREFIX = `${RESTORE_TEMP_PREFIX}${randomBytes(6).toString('hex')}-`;
let tempCount = 0;

function tempBeside(abs: Buffer): Buffer {
  const dir = abs.subarray(0, abs.lastIndexOf(SLASH) + 1);
  return Buffer.concat([dir, Buffer.from(`${TEMP_PREFIX}${++tempCount}`)]);
}

/**
 * Writes a file from `fill` (which writes its bytes through the descriptor and says whether they
 * are right); on `true` it is given its mode and mtime and renamed into place, else removed.
 * Answers the written file's stat, or undefined when `fill` refused it.
 */
export async function writeFileAtomic(abs: Buffer, mode: number, mtimeMs: number, fill: (fd: number) => boolean | Promise<boolean>): Promise<Stats | undefined> {
  const temp = tempBeside(abs);
  // Created with its mode, which the umask may narrow: then it is set again (most files need no second call).
  const fd = openSync(temp, 'wx', mode & 0o777);
  let stat: Stats | undefined;
  try {
    if (await fill(fd)) {
      futimesSync(fd, mtimeMs / 1000, mtimeMs / 1000);
      stat = fstatSync(fd);
      if ((stat.mode & 0o7777) !== mode) {
        fchmodSync(fd, mode);
        stat = fstatSync(fd);
      }
    }
  } finally {
    closeSync(fd);
    if (!stat) rmSync(temp, { force: true });
  }
  if (!stat) return undefined;
  try {
    renameSync(temp, abs);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  return stat;
}

/** The stat of a restored file the local index cache keeps. */
export interface WrittenStat {
  size: number;
  mtimeMs: number;
  ino: number;
  mode: number;
}

/**
 * Writes `bytes` as a file the same way in one go, with as few calls as a file takes: create
 * (with its mode), write, set the mtime, stat, close, rename (and a chmod only when the umask
 * narrowed the mode).
 */
export function writeBytesAtomic(abs: Buffer, mode: number, mtimeMs: number, bytes: Uint8Array): WrittenStat {
  const temp = tempBeside(abs);
  const fd = openSync(temp, 'wx', mode & 0o777);
  let stat: Stats;
  let open = true;
  try {
    writeAll(fd, bytes);
    futimesSync(fd, mtimeMs / 1000, mtimeMs / 1000);
    stat = fstatSync(fd);
    if ((stat.mode & 0o7777) !== mode) {
      fchmodSync(fd, mode);
      stat = fstatSync(fd);
    }
    open = false;
    closeSync(fd);
    renameSync(temp, abs);
  } catch (error) {
    // Never closed twice: workers share the descriptor table, another thread may hold the number by now.
    if (open) closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  return { size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino, mode: stat.mode & 0o7777 };
}

/** Writes all of `bytes` at `position`. */
export function writeAll(fd: number, bytes: Uint8Array, position = 0): void {
  let written = 0;
  while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written, position + written);
}

export function writeLinkAtomic(abs: Buffer, target: Buffer, mtimeMs: number): void {
  const temp = tempBeside(abs);
  symlinkSync(target, temp);
  try {
    lutimesSync(temp, mtimeMs / 1000, mtimeMs / 1000);
    renameSync(temp, abs);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
