// Lists what a snapshot keeps of one root: every folder, file and symlink not excluded, found
// with lstat so no symlink is ever followed. Names are exact: a folder is listed as text, and
// again as raw bytes when a name in it is not UTF-8 (the text listing shows it with U+FFFD), so
// newlines and bytes that are not UTF-8 stay exact while the common case costs no Buffer per
// name. FIFOs, sockets and devices are left out and reported.
import { lstatSync, readdirSync, readlinkSync, statSync, type Dirent } from 'node:fs';
import type { ExcludeMatcher } from './excludes.ts';
import { displayPath } from './index-file.ts';
import { Slicer } from './slices.ts';
import type { SkippedEntry, SnapshotRoot } from './types.ts';
import { RESTORE_TEMP_PREFIX } from './write-file.ts';

/** A path as text when its bytes are UTF-8, else its raw bytes. */
export type RawPath = string | Buffer;

interface WalkedBase {
  /** The path below the root, `/`-separated. */
  rel: RawPath;
  /** The absolute path. */
  abs: RawPath;
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
const REPLACEMENT = '\uFFFD';
const errno = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** Byte order of UTF-8 names is code point order; JavaScript's `<` is UTF-16 order, which differs above U+FFFF. */
const byCodePoint = (a: string, b: string) => (a === b ? 0 : Buffer.compare(Buffer.from(a), Buffer.from(b)));
const isAscii = (text: string) => /^[\x00-\x7f]*$/.test(text);

export async function walkRoot(root: SnapshotRoot, matcher: ExcludeMatcher, skipped: SkippedEntry[], signal?: AbortSignal): Promise<WalkedRoot> {
  const rootStat = statSync(root.dir, { throwIfNoEntry: false });
  if (!rootStat) return { root, absent: true, entries: [] };
  if (!rootStat.isDirectory()) throw new Error(`${root.dir} (the ${root.id} folder) is not a folder`);
  const only = root.only && new Set(root.only);
  const report = (rel: RawPath, reason: string) => skipped.push({ root: root.id, path: typeof rel === 'string' ? rel : displayPath(rel), reason });
  const slicer = new Slicer();
  const entries: Walked[] = [];

  /** The entries of a folder, sorted by the bytes of their names; undefined when it cannot be listed. */
  const list = (abs: RawPath, rel: RawPath | undefined): Array<Dirent<string> | Dirent<Buffer>> | undefined => {
    try {
      if (typeof abs === 'string') {
        const dirents = readdirSync(abs, { withFileTypes: true });
        if (!dirents.some((dirent) => dirent.name.includes(REPLACEMENT))) {
          return dirents.every((dirent) => isAscii(dirent.name))
            ? dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
            : dirents.sort((a, b) => byCodePoint(a.name, b.name));
        }
      }
      const raw = readdirSync(typeof abs === 'string' ? Buffer.from(abs) : abs, { withFileTypes: true, encoding: 'buffer' }) as Dirent<Buffer>[];
      return raw.sort((a, b) => Buffer.compare(a.name, b.name));
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return undefined;
      if (errno(error) === 'EACCES' || errno(error) === 'EPERM') return void report(rel ?? '', 'unreadable');
      throw error;
    }
  };

  const walkDir = async (abs: RawPath, rel: RawPath | undefined): Promise<void> => {
    signal?.throwIfAborted();
    while (slicer.due()) await slicer.pass();
    const dirents = list(abs, rel);
    if (!dirents) return;
    for (const dirent of dirents) {
      const name = dirent.name;
      let entryRel: RawPath;
      let entryAbs: RawPath;
      let relText: string;
      if (typeof name === 'string' && typeof abs === 'string' && typeof rel !== 'object') {
        if (name.startsWith(RESTORE_TEMP_PREFIX)) continue; // a restore's file cut short by a crash
        entryRel = rel === undefined ? name : `${rel}/${name}`;
        entryAbs = `${abs}/${name}`;
        relText = entryRel;
      } else {
        const bytes = typeof name === 'string' ? Buffer.from(name) : name;
        if (bytes.subarray(0, TEMP_MARK.length).equals(TEMP_MARK)) continue;
        const relBytes = rel === undefined ? bytes : Buffer.concat([typeof rel === 'string' ? Buffer.from(rel) : rel, SLASH, bytes]);
        entryRel = relBytes;
        entryAbs = Buffer.concat([typeof abs === 'string' ? Buffer.from(abs) : abs, SLASH, bytes]);
        relText = relBytes.toString('utf8');
      }
      if (only && rel === undefined && !only.has(relText)) continue;
      // Decide from the folder listing's types when it has them: an excluded folder costs no lstat.
      const typed = dirent.isFile() || dirent.isDirectory() || dirent.isSymbolicLink() || dirent.isFIFO() || dirent.isSocket() || dirent.isBlockDevice() || dirent.isCharacterDevice();
      if (typed && matcher.excludes(relText, dirent.isDirectory())) continue;
      const stat = lstatSync(entryAbs, { throwIfNoEntry: false });
      if (!stat) continue; // gone since the listing
      if (!typed && matcher.excludes(relText, stat.isDirectory())) continue;
      if (stat.isFile()) {
        entries.push({ kind: 'file', rel: entryRel, abs: entryAbs, mtimeMs: stat.mtimeMs, mode: stat.mode & 0o7777, size: stat.size, ino: stat.ino });
      } else if (stat.isDirectory()) {
        entries.push({ kind: 'dir', rel: entryRel, abs: entryAbs, mtimeMs: stat.mtimeMs, mode: stat.mode & 0o7777 });
        await walkDir(entryAbs, entryRel);
      } else if (stat.isSymbolicLink()) {
        try {
          entries.push({ kind: 'link', rel: entryRel, abs: entryAbs, mtimeMs: stat.mtimeMs, target: readlinkSync(entryAbs, { encoding: 'buffer' }) });
        } catch (error) {
          if (errno(error) !== 'ENOENT' && errno(error) !== 'EINVAL') throw error;
        }
      } else {
        report(entryRel, stat.isFIFO() ? 'fifo' : stat.isSocket() ? 'socket' : 'device');
      }
      while (slicer.due()) await slicer.pass();
    }
  };

  await walkDir(root.dir, undefined);
  return { root, absent: false, entries };
}
