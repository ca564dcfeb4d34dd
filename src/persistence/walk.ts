// Lists what a snapshot keeps of one root: every folder, file and symlink not excluded, found
// with lstat so no symlink is ever followed. Names are raw bytes (newlines and bytes that are
// not UTF-8 stay exact); FIFOs, sockets and devices are left out and reported.
import { isUtf8 } from 'node:buffer';
import { lstatSync, readdirSync, readlinkSync, statSync, type Dirent } from 'node:fs';
import type { ExcludeMatcher } from './excludes.ts';
import { displayPath } from './index-file.ts';
import { Slicer } from './slices.ts';
import type { SkippedEntry, SnapshotRoot } from './types.ts';
import { RESTORE_TEMP_PREFIX } from './write-file.ts';

interface WalkedBase {
  /** The path below the root, raw bytes, `/`-separated… */
  rel: Buffer;
  /** …and as text when those bytes are UTF-8. */
  text: string | undefined;
  /** The absolute path, raw bytes. */
  abs: Buffer;
  mtimeMs: number;
}
export interface WalkedFile extends WalkedBase { kind: 'file'; mode: number; size: number; ino: number }
export interface WalkedDir extends WalkedBase { kind: 'dir'; mode: number }
export interface WalkedLink extends WalkedBase { kind: 'link'; target: Buffer }
export type Walked = WalkedFile | WalkedDir | WalkedLink;

export interface WalkedRoot {
  root: SnapshotRoot;
  absent: boolean;
  /** Parents before children, each folder's entries in byte order of their names. */
  entries: Walked[];
}

const SLASH = Buffer.from('/');
const TEMP_MARK = Buffer.from(RESTORE_TEMP_PREFIX);
const errno = (error: unknown) => (error as NodeJS.ErrnoException).code;

export async function walkRoot(root: SnapshotRoot, matcher: ExcludeMatcher, skipped: SkippedEntry[], signal?: AbortSignal): Promise<WalkedRoot> {
  const rootStat = statSync(root.dir, { throwIfNoEntry: false });
  if (!rootStat) return { root, absent: true, entries: [] };
  if (!rootStat.isDirectory()) throw new Error(`${root.dir} (the ${root.id} folder) is not a folder`);
  const only = root.only && new Set(root.only);
  const report = (rel: Buffer, reason: string) => skipped.push({ root: root.id, path: displayPath(rel), reason });
  const slicer = new Slicer();
  const entries: Walked[] = [];

  const walkDir = async (abs: Buffer, rel: Buffer | undefined): Promise<void> => {
    signal?.throwIfAborted();
    while (slicer.due()) await slicer.pass();
    let dirents: Dirent<Buffer>[];
    try {
      dirents = readdirSync(abs, { withFileTypes: true, encoding: 'buffer' }) as Dirent<Buffer>[];
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return;
      if (errno(error) === 'EACCES' || errno(error) === 'EPERM') return void report(rel ?? Buffer.alloc(0), 'unreadable');
      throw error;
    }
    dirents.sort((a, b) => Buffer.compare(a.name, b.name));
    for (const dirent of dirents) {
      if (dirent.name.subarray(0, TEMP_MARK.length).equals(TEMP_MARK)) continue; // a restore's file cut short by a crash
      const entryRel = rel ? Buffer.concat([rel, SLASH, dirent.name]) : dirent.name;
      const text = isUtf8(entryRel) ? entryRel.toString('utf8') : undefined;
      const relText = text ?? entryRel.toString('utf8');
      if (only && !rel && !only.has(relText)) continue;
      // Decide from the folder listing's types when it has them: an excluded folder costs no lstat.
      const typed = dirent.isDirectory() || dirent.isFile() || dirent.isSymbolicLink() || dirent.isFIFO() || dirent.isSocket() || dirent.isBlockDevice() || dirent.isCharacterDevice();
      if (typed && matcher.excludes(relText, dirent.isDirectory())) continue;
      const entryAbs = Buffer.concat([abs, SLASH, dirent.name]);
      const stat = lstatSync(entryAbs, { throwIfNoEntry: false });
      if (!stat) continue; // gone since the listing
      if (!typed && matcher.excludes(relText, stat.isDirectory())) continue;
      const base = { rel: entryRel, text, abs: entryAbs, mtimeMs: stat.mtimeMs };
      if (stat.isDirectory()) {
        entries.push({ kind: 'dir', ...base, mode: stat.mode & 0o7777 });
        await walkDir(entryAbs, entryRel);
      } else if (stat.isFile()) {
        entries.push({ kind: 'file', ...base, mode: stat.mode & 0o7777, size: stat.size, ino: stat.ino });
      } else if (stat.isSymbolicLink()) {
        try {
          entries.push({ kind: 'link', ...base, target: readlinkSync(entryAbs, { encoding: 'buffer' }) });
        } catch (error) {
          if (errno(error) !== 'ENOENT' && errno(error) !== 'EINVAL') throw error;
        }
      } else {
        report(entryRel, stat.isFIFO() ? 'fifo' : stat.isSocket() ? 'socket' : 'device');
      }
      while (slicer.due()) await slicer.pass();
    }
  };

  await walkDir(Buffer.from(root.dir), undefined);
  return { root, absent: false, entries };
}
